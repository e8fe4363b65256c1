// What the operations on FTP accounts (CONTRACT §14) share: how each is answered (never its
// password), and which login a call names: `<login>@<main domain>`, given whole or as the part
// before the `@`.
import { apiError, invalid } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import type { Account } from '../store/accounts.ts';
import { type FtpAccount, ftpLoginName } from '../store/ftp-accounts.ts';
import type { AccountObjects } from '../store/objects.ts';

/** An FTP account as add_ftp_account and list_ftp_accounts answer it. */
export function ftpObject(account: Account, ftp: FtpAccount) {
  return {
    login: ftpLoginName(account, ftp),
    directory: ftp.directory,
    quota: formatLimit(ftp.quota),
    created: ftp.createdAt.toISOString(),
  };
}

/** The part before the `@` of a login the call gave, whose domain (if given) is the main one. */
export function loginOf(account: Account, given: { login: string; domain: string | null }): string {
  if (given.domain !== null && given.domain !== account.domain)
    throw invalid('login', `an FTP login is <login>@${account.domain}, in the account's main domain`);
  return given.login;
}

/** The account's FTP account `login`, or 400 object_not_found. */
export function findFtpAccount(account: Account, objects: AccountObjects, login: string): FtpAccount {
  const found = objects.ftp_accounts.find((f) => f.login === login);
  if (!found)
    throw apiError('object_not_found', { kind: 'FTP account', name: `${login}@${account.domain}` }, 'login');
  return found;
}
