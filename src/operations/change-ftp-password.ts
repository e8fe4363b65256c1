// change_ftp_password (CONTRACT §14): an FTP account's own password (never the account's). Its
// next login takes it; the store keeps its hash alone.
import { updateFtpPassword } from '../store/ftp-accounts.ts';
import { changeObjects } from './common.ts';
import { findFtpAccount, ftpObject, loginOf } from './ftp-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changeFtpPassword = defineOperation({
  name: 'change_ftp_password',
  summary: "Change an FTP account's password.",
  changesState: true,
  audiences: ['holder'],
  event: 'ftp_account.password_changed',
  params: {
    login: required(kinds.ftpLogin, 'The FTP login, with or without `@<main domain>`'),
    password: required(kinds.password, 'Its new password'),
  },
  example: { login: 'designer', password: 'N3w-Str0ng-Secret' },
  result: results.ftpAccount,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const passwordHash = await ctx.services.crypt.hash(input.password);
    const answer = await changeObjects(ctx, async (db, account, before) => {
      const found = findFtpAccount(account, before, loginOf(account, input.login));
      await updateFtpPassword(db, account.user, found.login, passwordHash);
      return ftpObject(account, found);
    });
    return { data: answer, info: `Password of ${answer.login} changed` };
  },
});
