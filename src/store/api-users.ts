// API accounts (the API Manager) in the store.
import { runRemembered } from './prepared.ts';
import type { ApiUserRow, Db } from './schema.ts';

export interface ApiUser {
  /** The API account itself, whatever its name (idempotency keys belong to it). */
  id: string;
  name: string;
  passwordHash: string;
  access: 'open' | 'restricted';
  allowedIps: string[];
  reseller: string | null;
  /** The bound reseller's identity (accounts.reseller_id) when it was bound. */
  resellerId: string | null;
  createdAt: Date;
  updatedAt: Date;
  lastUsedAt: Date | null;
}

function toApiUser(row: ApiUserRow): ApiUser {
  return {
    id: row.id,
    name: row.name,
    passwordHash: row.password_hash,
    access: row.access === 'restricted' ? 'restricted' : 'open',
    allowedIps: JSON.parse(row.allowed_ips) as string[],
    reseller: row.reseller,
    resellerId: row.reseller_id,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  };
}

export async function findApiUser(db: Db, name: string): Promise<ApiUser | undefined> {
  const [row] = await runRemembered<ApiUserRow>(
    db,
    'findApiUser',
    (d) => d.selectFrom('api_users').selectAll().where('name', '=', ''),
    [name],
  );
  return row && toApiUser(row);
}

export async function listApiUsers(db: Db): Promise<ApiUser[]> {
  return (await db.selectFrom('api_users').selectAll().orderBy('name').execute()).map(toApiUser);
}

export async function insertApiUser(db: Db, user: ApiUser): Promise<void> {
  await db
    .insertInto('api_users')
    .values({
      id: user.id,
      name: user.name,
      password_hash: user.passwordHash,
      access: user.access,
      allowed_ips: JSON.stringify(user.allowedIps),
      reseller: user.reseller,
      reseller_id: user.resellerId,
      created_at: user.createdAt.toISOString(),
      updated_at: user.updatedAt.toISOString(),
      last_used_at: null,
    })
    .execute();
}

/** Returns whether the API account existed. */
export async function updateApiUser(
  db: Db,
  name: string,
  change: {
    passwordHash?: string;
    access?: 'open' | 'restricted';
    allowedIps?: string[];
    reseller?: { name: string; id: string } | null;
  },
): Promise<boolean> {
  const result = await db
    .updateTable('api_users')
    .set({
      ...(change.passwordHash !== undefined && { password_hash: change.passwordHash }),
      ...(change.access !== undefined && { access: change.access }),
      ...(change.allowedIps !== undefined && { allowed_ips: JSON.stringify(change.allowedIps) }),
      ...(change.reseller !== undefined && {
        reseller: change.reseller?.name ?? null,
        reseller_id: change.reseller?.id ?? null,
      }),
      updated_at: new Date().toISOString(),
    })
    .where('name', '=', name)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function touchApiUser(db: Db, name: string, at: Date): Promise<void> {
  await db
    .updateTable('api_users')
    .set({ last_used_at: at.toISOString() })
    .where('name', '=', name)
    .execute();
}

/**
 * Deletes the API account, then the answers stored under its idempotency keys (no one can reach
 * those once the account is gone: keys belong to its id, which no new account gets again).
 */
export async function deleteApiUser(db: Db, name: string): Promise<boolean> {
  const deleted = await db.deleteFrom('api_users').where('name', '=', name).returning('id').execute();
  if (deleted.length === 0) return false;
  await db
    .deleteFrom('idempotency_keys')
    .where(
      'owner',
      'in',
      deleted.map((row) => row.id),
    )
    .execute();
  return true;
}
