// remove_ftp_account (CONTRACT §14): takes an FTP login from the account. It logs in no more; the
// files it uploaded are the account's and stay.
import { deleteFtpAccount } from '../store/ftp-accounts.ts';
import { changeObjects } from './common.ts';
import { findFtpAccount, ftpObject, loginOf } from './ftp-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeFtpAccount = defineOperation({
  name: 'remove_ftp_account',
  summary: 'Remove an FTP login (the files it uploaded stay).',
  changesState: true,
  audiences: ['holder'],
  event: 'ftp_account.removed',
  params: {
    login: required(kinds.ftpLogin, 'The FTP login, with or without `@<main domain>`'),
  },
  example: { login: 'designer' },
  result: results.ftpAccount,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const answer = await changeObjects(ctx, async (db, account, before) => {
      const found = findFtpAccount(account, before, loginOf(account, input.login));
      await deleteFtpAccount(db, account.user, found.login);
      return ftpObject(account, found);
    });
    return { data: answer, info: `FTP account ${answer.login} removed` };
  },
});
