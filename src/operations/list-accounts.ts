import { listAccounts as listAll } from '../store/accounts.ts';
import { scopeOf } from './common.ts';
import { defineOperation } from './operation.ts';
import { listedRecord } from './record.ts';

export const listAccounts = defineOperation({
  name: 'listaccts',
  summary: 'Every account (under a reseller: the ones it owns), keyed by user name.',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  async run(ctx) {
    const accounts: Record<string, ReturnType<typeof listedRecord>> = {};
    for (const account of await listAll(ctx.db, scopeOf(ctx.caller))) {
      accounts[account.user] = listedRecord(account, ctx.services.config);
    }
    return { data: { accounts }, info: `${Object.keys(accounts).length} account(s)` };
  },
});
