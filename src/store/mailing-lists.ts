// The mailing lists of accounts in the store (CONTRACT §14). Rows become MailingList objects here
// and nowhere else. A list keeps the members its holder added; those who subscribed by mail are the
// list manager's own (docs/linux-driver.md, Mailing lists).
import { noteAccount } from './pending.ts';
import type { Db, MailingListRow } from './schema.ts';

export interface MailingList {
  /** The list's address, local part and domain in lower case. */
  email: string;
  /** The address that gets mail to `<list>+owner@<domain>`. */
  owner: string;
  /** The members the holder added, by address. */
  members: string[];
  createdAt: Date;
}

export function toMailingList(row: MailingListRow): MailingList {
  return {
    email: row.email,
    owner: row.owner,
    members: row.members === '' ? [] : row.members.split(','),
    createdAt: new Date(row.created_at),
  };
}

export function toMailingListRow(user: string, list: MailingList): MailingListRow {
  return {
    email: list.email,
    user,
    owner: list.owner,
    members: list.members.join(','),
    created_at: list.createdAt.toISOString(),
  };
}

/** The account's mailing lists, by address. */
export async function mailingListsOf(db: Db, user: string): Promise<MailingList[]> {
  const rows = await db
    .selectFrom('mailing_lists')
    .selectAll()
    .where('user', '=', user)
    .orderBy('email')
    .execute();
  return rows.map(toMailingList);
}

/** Gives the account a list; the store refuses an address another list has. */
export async function insertMailingList(db: Db, user: string, list: MailingList): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('mailing_lists').values(toMailingListRow(user, list)).execute();
}

/** Sets a list's members. */
export async function updateListMembers(
  db: Db,
  user: string,
  email: string,
  members: string[],
): Promise<void> {
  await noteAccount(db, user);
  await db
    .updateTable('mailing_lists')
    .set({ members: members.join(',') })
    .where('user', '=', user)
    .where('email', '=', email)
    .execute();
}

export async function deleteMailingList(db: Db, user: string, email: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('mailing_lists').where('user', '=', user).where('email', '=', email).execute();
}

/** Removes every mailing list of the account. */
export async function deleteMailingListsOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('mailing_lists').where('user', '=', user).execute();
}
