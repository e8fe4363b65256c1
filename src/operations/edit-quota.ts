import { saveAccount } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { changeState, enforceLimitsOfChange, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const editQuota = defineOperation({
  name: 'editquota',
  summary: "Change an account's disk quota (MB, or `unlimited`).",
  changesState: true,
  audiences: ['admin', 'reseller'],
  params: {
    user: required(kinds.user, 'Account user name'),
    quota: required(kinds.limit, 'Disk quota in MB, or `unlimited`'),
  },
  example: { user: 'alice', quota: '2048' },
  result: results.message,
  errors: ['account_not_found', 'reseller_limit'],
  async run(ctx, input) {
    const { principal } = ctx;
    await changeState(ctx, async (db, system) => {
      const before = await targetAccount(db, principal, input.user);
      const after = { ...before, limits: { ...before.limits, quota: input.quota } };
      await enforceLimitsOfChange(db, principal, after);
      await saveAccount(db, after);
      await system({ kind: 'limits', before, account: after, objects: await objectsOf(db, after.user) });
    });
    const message = `User disk quota changed for ${input.user}`;
    return { data: message, info: message };
  },
});
