import { targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { summaryRecord } from './record.ts';
import { results } from './results.ts';

export const accountSummary = defineOperation({
  name: 'accountsummary',
  summary: "One account's record, with its usage.",
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'alice' },
  result: results.summary,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const account = await targetAccount(ctx.db, ctx.principal, input.user);
    return {
      data: { acct: summaryRecord(account, ctx.services.fleet.hosting(account.server)) },
      info: `Account ${account.user}`,
    };
  },
});
