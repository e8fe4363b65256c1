// What an account's holder logs in with (CONTRACT §14): the account's password hash, kept on its
// row, and the API tokens the holder made. A token is kept as its SHA-256 alone: it is 256 random
// bits, so a fast hash is as good as a slow one, and finding it is one indexed lookup.
import { createHash, randomBytes } from 'node:crypto';
import { noteAccount } from './pending.ts';
import type { Db } from './schema.ts';

/** The account's password hash; null when the store has none yet (an account made before it kept them). */
export async function passwordHashOf(db: Db, user: string): Promise<string | null | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('password_hash')
    .where('user', '=', user)
    .executeTakeFirst();
  return row?.password_hash;
}

/** Sets the account's password hash, as part of the change that sets its password. */
export async function setPasswordHash(db: Db, user: string, hash: string): Promise<void> {
  await noteAccount(db, user);
  await db.updateTable('accounts').set({ password_hash: hash }).where('user', '=', user).execute();
}

/**
 * Keeps a hash the account's own server read from its system, only while the store has none: a
 * password set meanwhile wins.
 */
export async function adoptPasswordHash(db: Db, user: string, hash: string): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ password_hash: hash })
    .where('user', '=', user)
    .where('password_hash', 'is', null)
    .execute();
}

export interface ApiToken {
  name: string;
  createdAt: Date;
  lastUsedAt: Date | null;
}

/** The prefix of every token: a secret scanner can tell a Berth token from other text. */
const TOKEN_PREFIX = 'berth_';

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Whether text has the form of a token (the prefix and 43 base64url characters). */
export function looksLikeToken(text: string): boolean {
  return /^berth_[A-Za-z0-9_-]{43}$/.test(text);
}

export async function tokensOf(db: Db, user: string): Promise<ApiToken[]> {
  const rows = await db
    .selectFrom('api_tokens')
    .select(['name', 'created_at', 'last_used_at'])
    .where('user', '=', user)
    .orderBy('name')
    .execute();
  return rows.map((row) => ({
    name: row.name,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
  }));
}

/** Makes a token named `name` for the account: the token, which is kept nowhere. */
export async function insertToken(db: Db, user: string, name: string, at: Date): Promise<string> {
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  await db
    .insertInto('api_tokens')
    .values({ hash: tokenHash(token), user, name, created_at: at.toISOString(), last_used_at: null })
    .execute();
  return token;
}

/** Whether the account had a token of that name, now removed. */
export async function deleteToken(db: Db, user: string, name: string): Promise<boolean> {
  const result = await db
    .deleteFrom('api_tokens')
    .where('user', '=', user)
    .where('name', '=', name)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function deleteTokensOf(db: Db, user: string): Promise<void> {
  await db.deleteFrom('api_tokens').where('user', '=', user).execute();
}

/** The account a token belongs to, by the token's hash. */
export async function tokenOwner(db: Db, hash: string): Promise<{ user: string; name: string } | undefined> {
  return await db
    .selectFrom('api_tokens')
    .select(['user', 'name'])
    .where('hash', '=', hash)
    .executeTakeFirst();
}

/** Records when a token was last used, at most once a minute. */
export async function touchToken(db: Db, hash: string, at: Date): Promise<void> {
  const since = new Date(at.getTime() - 60_000).toISOString();
  await db
    .updateTable('api_tokens')
    .set({ last_used_at: at.toISOString() })
    .where('hash', '=', hash)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', since)]))
    .execute();
}
