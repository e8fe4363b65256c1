import { apiError } from '../core/errors.ts';
import { deleteAccount, ownedTotals } from '../store/accounts.ts';
import { objectsOf } from '../store/objects.ts';
import { forgetSsoTokensOf } from '../store/sso-tokens.ts';
import { changeState, refuseOwnAccount, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeAccount = defineOperation({
  name: 'removeacct',
  summary: 'Remove an account and everything it has on the server.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.removed',
  vetoable: true,
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'alice' },
  result: results.message,
  errors: ['account_not_found', 'reseller_has_accounts'],
  async run(ctx, input) {
    const { principal } = ctx;
    refuseOwnAccount(principal, input.user, 'remove');
    await changeState(ctx, async (db, system) => {
      const account = await targetAccount(db, principal, input.user);
      if (account.reseller) {
        const { accounts } = await ownedTotals(db, account.user, null);
        if (accounts > 0)
          throw apiError('reseller_has_accounts', { user: account.user, count: accounts }, 'user');
      }
      // What the system has: the objects as they were before the account's rows go.
      const objects = await objectsOf(db, account.user);
      await deleteAccount(db, account.user);
      // A single sign-on URL issued for it must not open an account made later under its name.
      await forgetSsoTokensOf(db, account.user);
      await system({ kind: 'remove', account, objects });
    });
    const message = `User account removed ${input.user}`;
    return { data: message, info: message };
  },
});
