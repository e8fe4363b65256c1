import { saveAccount } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { changeState, refuseOwnAccount, targetAccount } from './common.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { resellerOf } from './principal.ts';
import { results } from './results.ts';

export const suspendAccount = defineOperation({
  name: 'suspendacct',
  summary:
    "Suspend an account. Again on a suspended account: the time is kept, the reason replaced if given (a reseller cannot replace the administrator's).",
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.suspended',
  params: {
    user: required(kinds.user, 'Account user name'),
    reason: optional(kinds.reason, 'Why; shown in listsuspended (may hold tab and newline)'),
  },
  example: { user: 'alice', reason: 'Unpaid invoice 1042' },
  result: results.message,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const { principal, services } = ctx;
    const reseller = resellerOf(principal);
    refuseOwnAccount(principal, input.user, 'suspend');
    await changeState(ctx, async (db, system) => {
      const account = await targetAccount(db, principal, input.user);
      if (account.suspension) {
        // The administrator's suspension wins whoever suspended first: the administrator's
        // renewal makes it the administrator's, and a reseller cannot change it (nor its reason).
        const { suspension } = account;
        if (reseller && suspension.by === 'root') return;
        const renewed = {
          ...suspension,
          reason: input.reason ?? suspension.reason,
          by: reseller ? suspension.by : 'root',
        };
        if (renewed.reason === suspension.reason && renewed.by === suspension.by) return;
        await saveAccount(db, { ...account, suspension: renewed });
        return;
      }
      account.suspension = {
        reason: input.reason ?? '',
        at: services.now(),
        by: reseller?.user ?? 'root',
      };
      await saveAccount(db, account);
      await system({ kind: 'suspend', account, objects: await objectsOf(db, account.user) });
    });
    const message = `User account suspended ${input.user}`;
    return { data: message, info: message };
  },
});
