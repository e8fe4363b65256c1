// The MariaDB databases and database users of accounts in the store (CONTRACT §14). Rows become
// SqlDatabase and DatabaseUser objects here and nowhere else. A user's password is kept as
// MariaDB's own hash alone, which is what the server is given too (never the password).
import { noteAccount } from './pending.ts';
import type { DatabaseRow, DatabaseUserRow, Db } from './schema.ts';

export interface SqlDatabase {
  /** `<user>_<suffix>`. */
  name: string;
  createdAt: Date;
}

export interface DatabaseUser {
  /** `<user>_<suffix>`, at `localhost`. */
  name: string;
  /** mysql_native_password: `*` and 40 upper-case hex digits. */
  passwordHash: string;
  /** The account's databases it has every privilege on, by name. */
  grants: string[];
  createdAt: Date;
}

export function toDatabase(row: DatabaseRow): SqlDatabase {
  return { name: row.name, createdAt: new Date(row.created_at) };
}

export function toDatabaseRow(user: string, database: SqlDatabase): DatabaseRow {
  return { name: database.name, user, created_at: database.createdAt.toISOString() };
}

export function toDatabaseUser(row: DatabaseUserRow): DatabaseUser {
  return {
    name: row.name,
    passwordHash: row.password_hash,
    grants: row.grants === '' ? [] : row.grants.split(',').sort(),
    createdAt: new Date(row.created_at),
  };
}

export function toDatabaseUserRow(user: string, dbUser: DatabaseUser): DatabaseUserRow {
  return {
    name: dbUser.name,
    user,
    password_hash: dbUser.passwordHash,
    grants: [...dbUser.grants].sort().join(','),
    created_at: dbUser.createdAt.toISOString(),
  };
}

/** The account's databases, by name. */
export async function databasesOf(db: Db, user: string): Promise<SqlDatabase[]> {
  const rows = await db
    .selectFrom('databases')
    .selectAll()
    .where('user', '=', user)
    .orderBy('name')
    .execute();
  return rows.map(toDatabase);
}

/** The account's database users, by name. */
export async function databaseUsersOf(db: Db, user: string): Promise<DatabaseUser[]> {
  const rows = await db
    .selectFrom('database_users')
    .selectAll()
    .where('user', '=', user)
    .orderBy('name')
    .execute();
  return rows.map(toDatabaseUser);
}

export async function insertDatabase(db: Db, user: string, database: SqlDatabase): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('databases').values(toDatabaseRow(user, database)).execute();
}

/** Removes a database, and its grant from every user of the account. */
export async function deleteDatabase(db: Db, user: string, name: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('databases').where('user', '=', user).where('name', '=', name).execute();
  for (const dbUser of await databaseUsersOf(db, user))
    if (dbUser.grants.includes(name))
      await updateDatabaseUser(db, user, dbUser.name, { grants: dbUser.grants.filter((g) => g !== name) });
}

export async function insertDatabaseUser(db: Db, user: string, dbUser: DatabaseUser): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('database_users').values(toDatabaseUserRow(user, dbUser)).execute();
}

export async function updateDatabaseUser(
  db: Db,
  user: string,
  name: string,
  change: { passwordHash?: string; grants?: string[] },
): Promise<void> {
  await noteAccount(db, user);
  await db
    .updateTable('database_users')
    .set({
      ...(change.passwordHash !== undefined && { password_hash: change.passwordHash }),
      ...(change.grants !== undefined && { grants: [...change.grants].sort().join(',') }),
    })
    .where('user', '=', user)
    .where('name', '=', name)
    .execute();
}

export async function deleteDatabaseUser(db: Db, user: string, name: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('database_users').where('user', '=', user).where('name', '=', name).execute();
}

/** Removes every database and database user of the account. */
export async function deleteDatabasesOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('databases').where('user', '=', user).execute();
  await db.deleteFrom('database_users').where('user', '=', user).execute();
}
