// An account's objects (CONTRACT §14) as one value: what a system change carries with the account,
// read from the store and turned into rows (to travel between servers) and back. A new kind of
// object adds its table to OBJECT_TABLES (schema.ts), its list here, and its row mapping to KINDS.
import { type CronJob, cronJobsOf, toCronJob, toCronJobRow } from './cron-jobs.ts';
import {
  type DatabaseUser,
  databasesOf,
  databaseUsersOf,
  type SqlDatabase,
  toDatabase,
  toDatabaseRow,
  toDatabaseUser,
  toDatabaseUserRow,
} from './databases.ts';
import { type Domain, domainsOf, mainDomain, toDomain, toDomainRow } from './domains.ts';
import { type FtpAccount, ftpAccountsOf, toFtpAccount, toFtpAccountRow } from './ftp-accounts.ts';
import {
  type Forwarder,
  forwardersOf,
  type Mailbox,
  mailboxesOf,
  toForwarder,
  toForwarderRow,
  toMailbox,
  toMailboxRow,
} from './mailboxes.ts';
import { type MailingList, mailingListsOf, toMailingList, toMailingListRow } from './mailing-lists.ts';
import { type Database, type Db, OBJECT_TABLES, type ObjectRows, type ObjectTable } from './schema.ts';

export interface AccountObjects {
  /** The main domain first. */
  domains: Domain[];
  mailboxes: Mailbox[];
  forwarders: Forwarder[];
  /** Oldest first. */
  cron_jobs: CronJob[];
  mailing_lists: MailingList[];
  /** MariaDB databases, by name. */
  databases: SqlDatabase[];
  /** MariaDB users, by name, each with the databases granted to it. */
  database_users: DatabaseUser[];
  /** By login. */
  ftp_accounts: FtpAccount[];
}

/** How each kind's rows become objects and back; the rows name their account in `user`. */
const KINDS: {
  [T in ObjectTable]: {
    read(db: Db, user: string): Promise<AccountObjects[T]>;
    toObject(row: Database[T]): AccountObjects[T][number];
    toRow(user: string, object: AccountObjects[T][number]): Database[T];
  };
} = {
  domains: { read: domainsOf, toObject: toDomain, toRow: toDomainRow },
  mailboxes: { read: mailboxesOf, toObject: toMailbox, toRow: toMailboxRow },
  forwarders: { read: forwardersOf, toObject: toForwarder, toRow: toForwarderRow },
  cron_jobs: { read: cronJobsOf, toObject: toCronJob, toRow: toCronJobRow },
  mailing_lists: { read: mailingListsOf, toObject: toMailingList, toRow: toMailingListRow },
  databases: { read: databasesOf, toObject: toDatabase, toRow: toDatabaseRow },
  database_users: { read: databaseUsersOf, toObject: toDatabaseUser, toRow: toDatabaseUserRow },
  ftp_accounts: { read: ftpAccountsOf, toObject: toFtpAccount, toRow: toFtpAccountRow },
};

/** A kind seen apart from its table's types, for the loops over every table. */
interface AnyKind {
  read(db: Db, user: string): Promise<unknown[]>;
  toObject(row: unknown): unknown;
  toRow(user: string, object: unknown): unknown;
}
const kindOf = (table: ObjectTable): AnyKind => KINDS[table] as unknown as AnyKind;

/** The account's objects as the store has them now. */
export async function objectsOf(db: Db, user: string): Promise<AccountObjects> {
  const objects: Record<string, unknown[]> = {};
  for (const table of OBJECT_TABLES) objects[table] = await kindOf(table).read(db, user);
  return objects as unknown as AccountObjects;
}

/** Every account's objects, by user, read in one pass over each table (`berth doctor`). */
export async function objectsByUser(db: Db): Promise<Map<string, AccountObjects>> {
  const byUser = new Map<string, AccountObjects>();
  for (const table of OBJECT_TABLES) {
    const kind = kindOf(table);
    for (const row of await db.selectFrom(table).selectAll().execute()) {
      let objects = byUser.get(row.user);
      if (!objects) {
        objects = noObjects();
        byUser.set(row.user, objects);
      }
      (objects[table] as unknown[]).push(kind.toObject(row));
    }
  }
  return byUser;
}

/** No objects of any kind. */
export function noObjects(): AccountObjects {
  return Object.fromEntries(OBJECT_TABLES.map((table) => [table, []])) as unknown as AccountObjects;
}

/**
 * The objects of an account the store keeps nothing else for: its main domain alone (an account
 * made before its objects were kept, or a driver asked without them).
 */
export function mainObjects(account: { domain: string; setupAt: Date }): AccountObjects {
  return { ...noObjects(), domains: [mainDomain(account.domain, account.setupAt)] };
}

export function toObjectRows(user: string, objects: AccountObjects): ObjectRows {
  const rows: Record<string, unknown[]> = {};
  for (const table of OBJECT_TABLES)
    rows[table] = (objects[table] as unknown[]).map((object) => kindOf(table).toRow(user, object));
  return rows as unknown as ObjectRows;
}

/**
 * The objects rows stand for; null when they are not rows of every kind. A kind later than
 * domains that the rows lack (sent by a server of an earlier Berth, which had none) is none.
 */
export function fromObjectRows(rows: unknown): AccountObjects | null {
  if (typeof rows !== 'object' || rows === null) return null;
  const objects: Record<string, unknown[]> = {};
  for (const table of OBJECT_TABLES) {
    const given = (rows as Record<string, unknown>)[table];
    const list = given === undefined && table !== 'domains' ? [] : given;
    if (!Array.isArray(list) || !list.every((row) => typeof row === 'object' && row !== null)) return null;
    objects[table] = list.map((row) => kindOf(table).toObject(row));
  }
  return objects as unknown as AccountObjects;
}
