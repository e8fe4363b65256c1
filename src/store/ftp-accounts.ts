// The FTP accounts of accounts in the store (CONTRACT §14). Rows become FtpAccount objects here and
// nowhere else. A password is kept as its hash alone.
import { noteAccount } from './pending.ts';
import type { Db, FtpAccountRow } from './schema.ts';

export interface FtpAccount {
  /** The part before `@<main domain>`, lower case. */
  login: string;
  /** SHA-512 crypt. */
  passwordHash: string;
  /** Relative to the home, `''` for the home itself; never absolute, never `..`. */
  directory: string;
  /** In MB; null for none. */
  quota: number | null;
  createdAt: Date;
}

/** The whole login an FTP client gives: `<login>@<main domain>`. */
export const ftpLoginName = (account: { domain: string }, ftp: { login: string }) =>
  `${ftp.login}@${account.domain}`;

export function toFtpAccount(row: FtpAccountRow): FtpAccount {
  return {
    login: row.login,
    passwordHash: row.password_hash,
    directory: row.directory,
    quota: row.quota === null ? null : Number(row.quota),
    createdAt: new Date(row.created_at),
  };
}

export function toFtpAccountRow(user: string, ftp: FtpAccount): FtpAccountRow {
  return {
    user,
    login: ftp.login,
    password_hash: ftp.passwordHash,
    directory: ftp.directory,
    quota: ftp.quota,
    created_at: ftp.createdAt.toISOString(),
  };
}

/** The account's FTP accounts, by login. */
export async function ftpAccountsOf(db: Db, user: string): Promise<FtpAccount[]> {
  const rows = await db
    .selectFrom('ftp_accounts')
    .selectAll()
    .where('user', '=', user)
    .orderBy('login')
    .execute();
  return rows.map(toFtpAccount);
}

/** Gives the account an FTP account; the store refuses a login the account has. */
export async function insertFtpAccount(db: Db, user: string, ftp: FtpAccount): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('ftp_accounts').values(toFtpAccountRow(user, ftp)).execute();
}

export async function updateFtpPassword(db: Db, user: string, login: string, passwordHash: string) {
  await noteAccount(db, user);
  await db
    .updateTable('ftp_accounts')
    .set({ password_hash: passwordHash })
    .where('user', '=', user)
    .where('login', '=', login)
    .execute();
}

export async function deleteFtpAccount(db: Db, user: string, login: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('ftp_accounts').where('user', '=', user).where('login', '=', login).execute();
}

/** Removes every FTP account of the account. */
export async function deleteFtpAccountsOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('ftp_accounts').where('user', '=', user).execute();
}
