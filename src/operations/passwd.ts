import { setPasswordHash } from '../store/holder-credentials.ts';
import { endHolderSessions } from '../store/holder-sessions.ts';
import { objectsOf } from '../store/objects.ts';
import { changeState, generatePassword, targetAccount } from './common.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

export const passwd = defineOperation({
  name: 'passwd',
  summary: "Change an account's password.",
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'account.password_changed',
  params: {
    user: required(kinds.user, 'Account user name'),
    password: optional(kinds.password, 'New password; 20 random characters when omitted (never returned)'),
  },
  example: { user: 'alice', password: 'n3w-Secret-pass' },
  result: results.message,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const password = input.password ?? generatePassword();
    const hash = await ctx.services.crypt.hash(password);
    const user = await changeState(ctx, async (db, system) => {
      const account = await targetAccount(db, ctx.principal, input.user);
      await setPasswordHash(db, account.user, hash);
      // Every panel session of the account ends with the password it was opened with.
      await endHolderSessions(db, account.user);
      await system({
        kind: 'password',
        account,
        objects: await objectsOf(db, account.user),
        password,
        passwordHash: hash,
      });
      return account.user;
    });
    const message = `User password changed for ${user}`;
    return { data: message, info: message };
  },
});
