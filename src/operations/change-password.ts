// change_password (CONTRACT §14): the holder changes the account's own password, knowing the
// current one. It is passwd on the holder's side: the same system change (the account's login
// only, never a mailbox's, FTP account's or database user's), the hash kept in the store, the
// account's other panel sessions ended. A wrong current password counts toward the lock-out.

import { holderPasswordIs } from '../auth/holders.ts';
import { apiError, invalid } from '../core/errors.ts';
import { passwordHashOf, setPasswordHash } from '../store/holder-credentials.ts';
import { endHolderSessions } from '../store/holder-sessions.ts';
import { objectsOf } from '../store/objects.ts';
import { changeState, holderAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changePassword = defineOperation({
  name: 'change_password',
  summary: "Change the account's password, giving the current one.",
  changesState: true,
  audiences: ['holder'],
  event: 'account.password_changed',
  params: {
    current_password: required(kinds.password, 'The password the account has now'),
    password: required(kinds.password, 'The new password'),
  },
  example: { current_password: 'Old-Secret-pass1', password: 'n3w-Secret-pass' },
  result: results.message,
  errors: ['invalid_parameter', 'rate_limited'],
  async run(ctx, input) {
    const { services, principal } = ctx;
    const account = await holderAccount(services.store.db, principal);
    // An administrator or reseller acting for the holder knows no password: it must be given too.
    const verified = await holderPasswordIs(services, account, input.current_password, principal.address);
    if (verified === null) throw invalid('current_password', 'it is not the account’s password');
    const hash = await services.crypt.hash(input.password);
    const user = await changeState(ctx, async (db, system) => {
      const current = await holderAccount(db, principal);
      if (current.suspension) throw apiError('account_suspended', { user: current.user });
      // The password checked is still the account's (its row is locked now): a passwd between the
      // check and this transaction (the administrator's, after a compromise) is not undone by
      // someone who knew only the old one.
      if ((await passwordHashOf(db, current.user)) !== verified)
        throw invalid('current_password', 'it is not the account’s password');
      await setPasswordHash(db, current.user, hash);
      // The panel session the change came from goes on; every other one of the account ends.
      const own = principal.kind === 'holder' && principal.via !== 'password' && principal.via !== 'token';
      await endHolderSessions(db, current.user, own ? (principal.credential ?? undefined) : undefined);
      await system({
        kind: 'password',
        account: current,
        objects: await objectsOf(db, current.user),
        password: input.password,
        passwordHash: hash,
      });
      return current.user;
    });
    const message = `Password changed for ${user}`;
    return { data: message, info: message };
  },
});
