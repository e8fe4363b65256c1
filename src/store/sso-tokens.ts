// Single sign-on tokens (CONTRACT §14): create_user_session issues one for an account and a page of
// its panel; the panel's /login/sso takes it, once, before it expires. The store keeps only the
// token's hash, so neither the store nor a copy of it lets anyone in. Every server of a fleet shares
// the store, so a token issued by one is taken through any, and still only once.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from './schema.ts';

/** How long a token lets a browser in. */
export const SSO_TOKEN_SECONDS = 120;

/** A token as issued: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

function hashOf(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Drops the tokens no one can use any more. */
async function forgetExpired(db: Db, now: Date): Promise<void> {
  await db.deleteFrom('sso_tokens').where('expires_ms', '<=', now.getTime()).execute();
}

/**
 * Issues a token for `user`'s panel, opening on `page`, valid until `expires`; answers the token,
 * which is kept nowhere but in the answer.
 */
export async function issueSsoToken(
  db: Db,
  grant: { user: string; page: string; expires: Date },
  now: Date,
): Promise<string> {
  await forgetExpired(db, now);
  const token = randomBytes(32).toString('base64url');
  await db
    .insertInto('sso_tokens')
    .values({
      token_hash: hashOf(token),
      user: grant.user,
      page: grant.page,
      expires_ms: grant.expires.getTime(),
    })
    .execute();
  return token;
}

/**
 * Takes a token: the account and page it was issued for, or null when it is unknown, used or
 * expired. One statement deletes the row and reads it back, so of any number of concurrent takes,
 * on any servers sharing the store, exactly one gets it.
 */
export async function takeSsoToken(
  db: Db,
  token: string,
  now: Date,
): Promise<{ user: string; page: string } | null> {
  const row = TOKEN.test(token)
    ? await db
        .deleteFrom('sso_tokens')
        .where('token_hash', '=', hashOf(token))
        .where('expires_ms', '>', now.getTime())
        .returning(['user', 'page'])
        .executeTakeFirst()
    : undefined;
  await forgetExpired(db, now);
  return row ? { user: row.user, page: row.page } : null;
}

/** Forgets every token of an account: it is removed, and its name may be given to another. */
export async function forgetSsoTokensOf(db: Db, user: string): Promise<void> {
  await db.deleteFrom('sso_tokens').where('user', '=', user).execute();
}
