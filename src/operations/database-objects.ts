// What the operations on the holder's databases and database users (CONTRACT §14) share: how each
// is answered, how a `name` becomes the account's, and the `sql` limit, which counts databases
// (database users are not counted, as cPanel counts them not).
import { prefixedName } from '../core/databases.ts';
import { apiError } from '../core/errors.ts';
import { formatLimit } from '../core/values.ts';
import type { Account } from '../store/accounts.ts';
import type { DatabaseUser, SqlDatabase } from '../store/databases.ts';
import type { AccountObjects } from '../store/objects.ts';

export function databaseObject(database: SqlDatabase, objects: AccountObjects) {
  return {
    name: database.name,
    users: objects.database_users.filter((u) => u.grants.includes(database.name)).map((u) => u.name),
    created: database.createdAt.toISOString(),
  };
}

export function databaseUserObject(dbUser: DatabaseUser) {
  return { name: dbUser.name, databases: [...dbUser.grants], created: dbUser.createdAt.toISOString() };
}

/** The account's database of this name (the prefix added when missing); 404 when it has none. */
export function findDatabase(account: Account, objects: AccountObjects, param: string, raw: string) {
  const name = prefixedName(param, account.user, raw);
  const found = objects.databases.find((d) => d.name === name);
  if (!found) throw apiError('object_not_found', { kind: 'database', name }, param);
  return found;
}

/** The account's database user of this name (the prefix added when missing); 404 when none. */
export function findDatabaseUser(account: Account, objects: AccountObjects, param: string, raw: string) {
  const name = prefixedName(param, account.user, raw);
  const found = objects.database_users.find((u) => u.name === name);
  if (!found) throw apiError('object_not_found', { kind: 'database user', name }, param);
  return found;
}

/** Refuses one more database past the account's `sql` limit. */
export function refuseOverSqlLimit(account: Account, objects: AccountObjects): void {
  const limit = account.limits.sql;
  if (limit !== null && objects.databases.length >= limit)
    throw apiError('limit_reached', { limit: 'sql', value: formatLimit(limit) });
}
