// list_ftp_accounts (CONTRACT §14): every FTP account of the holder's account, by login, each as
// add_ftp_account answers it (never its password). The account's own login is not one of them.
import { ftpAccountsOf } from '../store/ftp-accounts.ts';
import { holderAccount } from './common.ts';
import { ftpObject } from './ftp-objects.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listFtpAccounts = defineOperation({
  name: 'list_ftp_accounts',
  summary: "The account's FTP accounts (the account's own login is not one of them).",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.ftpAccounts,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const accounts = await ftpAccountsOf(ctx.db, account.user);
    return {
      data: accounts.map((ftp) => ftpObject(account, ftp)),
      info: `${accounts.length} FTP account(s) of ${account.user}`,
    };
  },
});
