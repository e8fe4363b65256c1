import { listSuspendedAccounts } from '../store/accounts.ts';
import { defineOperation } from './operation.ts';
import { scopeOf } from './principal.ts';
import { suspendedRecord } from './record.ts';
import { results } from './results.ts';

export const listSuspended = defineOperation({
  name: 'listsuspended',
  summary: 'The suspended accounts, with the reason and time of suspension.',
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.suspended,
  errors: [],
  async run(ctx) {
    const accounts: Record<string, ReturnType<typeof suspendedRecord>> = {};
    for (const account of await listSuspendedAccounts(ctx.db, scopeOf(ctx.principal))) {
      accounts[account.user] = suspendedRecord(account);
    }
    return { data: { accounts }, info: `${Object.keys(accounts).length} suspended account(s)` };
  },
});
