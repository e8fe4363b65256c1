// The portal's `root` password, kept as a SHA-512 crypt hash in the store's settings.
import { type Actor, audited } from './audited.ts';
import type { CryptPool } from './auth/crypt-pool.ts';
import { generatePassword } from './operations/common.ts';
import { deleteAllSessions } from './store/portal-sessions.ts';
import type { Db } from './store/schema.ts';
import { getSetting, setSetting } from './store/settings.ts';
import { parsePassword } from './values.ts';

const KEY = 'portal_password_hash';

/**
 * Sets the password (audited) and ends every portal session, here and on any server sharing the
 * store.
 */
export function setPortalPassword(db: Db, crypt: CryptPool, password: string, actor: Actor): Promise<void> {
  return audited(db, actor, 'admin set-password', null, async () => {
    await setSetting(db, KEY, await crypt.hash(parsePassword('password', password)));
    await deleteAllSessions(db);
  });
}

export async function portalPasswordHash(db: Db): Promise<string | undefined> {
  return getSetting(db, KEY);
}

/** Sets a random portal password when there is none; returns it so it can be shown once. */
export async function ensurePortalPassword(db: Db, crypt: CryptPool): Promise<string | null> {
  if (await portalPasswordHash(db)) return null;
  const password = generatePassword();
  await setSetting(db, KEY, await crypt.hash(password));
  return password;
}
