import { saveAccount } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { changeState, forbidden, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { resellerOf } from './principal.ts';
import { results } from './results.ts';

export const unsuspendAccount = defineOperation({
  name: 'unsuspendacct',
  summary: 'Lift the suspension of an account. On an active account: 200, nothing changes.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.unsuspended',
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'alice' },
  result: results.message,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const { principal } = ctx;
    const reseller = resellerOf(principal);
    await changeState(ctx, async (db, system) => {
      const account = await targetAccount(db, principal, input.user);
      if (!account.suspension) return;
      if (reseller && account.suspension.by === 'root') {
        throw forbidden(`The administrator suspended ${account.user}; only the administrator may lift it.`);
      }
      account.suspension = null;
      await saveAccount(db, account);
      await system({ kind: 'unsuspend', account, objects: await objectsOf(db, account.user) });
    });
    const message = `User account unsuspended ${input.user}`;
    return { data: message, info: message };
  },
});
