import { listSuspendedAccounts } from '../store/accounts.ts';
import { scopeOf } from './common.ts';
import { defineOperation } from './operation.ts';
import { suspendedRecord } from './record.ts';
import { results } from './results.ts';

export const listSuspended = defineOperation({
  name: 'listsuspended',
  summary: 'The suspended accounts, with the reason and time of suspension.',
  changesState: false,
  adminOnly: false,
  params: {},
  example: {},
  result: results.suspended,
  errors: [],
  async run(ctx) {
    const accounts: Record<string, ReturnType<typeof suspendedRecord>> = {};
    for (const account of await listSuspendedAccounts(ctx.db, scopeOf(ctx.caller))) {
      accounts[account.user] = suspendedRecord(account);
    }
    return { data: { accounts }, info: `${Object.keys(accounts).length} suspended account(s)` };
  },
});
