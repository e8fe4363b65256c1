// The mailboxes and forwarders of accounts in the store (CONTRACT §14). Rows become Mailbox and
// Forwarder objects here and nowhere else. A mailbox's password is kept as its hash alone.
import { noteAccount } from './pending.ts';
import type { Db, ForwarderRow, MailboxRow } from './schema.ts';

export interface Mailbox {
  /** The whole address, local part and domain in lower case. */
  email: string;
  /** SHA-512 crypt. */
  passwordHash: string;
  /** In MB; null for none. */
  quota: number | null;
  createdAt: Date;
}

export interface Forwarder {
  email: string;
  /** Where its mail goes: one to 20 addresses. */
  to: string[];
  createdAt: Date;
}

/** The domain of an address. */
export function domainOfAddress(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1);
}

export function toMailbox(row: MailboxRow): Mailbox {
  return {
    email: row.email,
    passwordHash: row.password_hash,
    quota: row.quota === null ? null : Number(row.quota),
    createdAt: new Date(row.created_at),
  };
}

export function toMailboxRow(user: string, mailbox: Mailbox): MailboxRow {
  return {
    email: mailbox.email,
    user,
    password_hash: mailbox.passwordHash,
    quota: mailbox.quota,
    created_at: mailbox.createdAt.toISOString(),
  };
}

export function toForwarder(row: ForwarderRow): Forwarder {
  return { email: row.email, to: row.destinations.split(','), createdAt: new Date(row.created_at) };
}

export function toForwarderRow(user: string, forwarder: Forwarder): ForwarderRow {
  return {
    email: forwarder.email,
    user,
    destinations: forwarder.to.join(','),
    created_at: forwarder.createdAt.toISOString(),
  };
}

/** The account's mailboxes, by address. */
export async function mailboxesOf(db: Db, user: string): Promise<Mailbox[]> {
  const rows = await db
    .selectFrom('mailboxes')
    .selectAll()
    .where('user', '=', user)
    .orderBy('email')
    .execute();
  return rows.map(toMailbox);
}

/** The account's forwarders, by address. */
export async function forwardersOf(db: Db, user: string): Promise<Forwarder[]> {
  const rows = await db
    .selectFrom('forwarders')
    .selectAll()
    .where('user', '=', user)
    .orderBy('email')
    .execute();
  return rows.map(toForwarder);
}

/** Gives the account a mailbox; the store refuses an address another mailbox has. */
export async function insertMailbox(db: Db, user: string, mailbox: Mailbox): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('mailboxes').values(toMailboxRow(user, mailbox)).execute();
}

/** Changes a mailbox's password hash or quota. */
export async function updateMailbox(
  db: Db,
  user: string,
  email: string,
  change: { passwordHash?: string; quota?: number | null },
): Promise<void> {
  await noteAccount(db, user);
  await db
    .updateTable('mailboxes')
    .set({
      ...(change.passwordHash !== undefined && { password_hash: change.passwordHash }),
      ...(change.quota !== undefined && { quota: change.quota }),
    })
    .where('user', '=', user)
    .where('email', '=', email)
    .execute();
}

export async function deleteMailbox(db: Db, user: string, email: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('mailboxes').where('user', '=', user).where('email', '=', email).execute();
}

/** Gives the account a forwarder; the store refuses an address another forwarder has. */
export async function insertForwarder(db: Db, user: string, forwarder: Forwarder): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('forwarders').values(toForwarderRow(user, forwarder)).execute();
}

export async function deleteForwarder(db: Db, user: string, email: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('forwarders').where('user', '=', user).where('email', '=', email).execute();
}

/** Removes every mailbox and forwarder of the account. */
export async function deleteMailOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('mailboxes').where('user', '=', user).execute();
  await db.deleteFrom('forwarders').where('user', '=', user).execute();
}
