// The portal's `root` password, kept as a SHA-512 crypt hash in the store's settings.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type Actor, audited } from './audited.ts';
import type { CryptPool } from './auth/crypt-pool.ts';
import { generatePassword } from './operations/common.ts';
import { deleteAllSessions } from './store/portal-sessions.ts';
import type { Db } from './store/schema.ts';
import { getSetting, setSetting } from './store/settings.ts';
import { parsePassword } from './values.ts';

const KEY = 'portal_password_hash';

/** Where serve leaves a portal password it made, in the data directory, until one is set. */
export const PORTAL_PASSWORD_FILE = 'portal-password';

/**
 * Sets the password (audited), ends every portal session, here and on any server sharing the
 * store, and removes the file a generated password was left in (`dataDir`).
 */
export async function setPortalPassword(
  db: Db,
  crypt: CryptPool,
  password: string,
  actor: Actor,
  dataDir: string,
): Promise<void> {
  await audited(db, actor, 'admin set-password', null, async () => {
    await setSetting(db, KEY, await crypt.hash(parsePassword('password', password)));
    await deleteAllSessions(db);
  });
  rmSync(join(dataDir, PORTAL_PASSWORD_FILE), { force: true });
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
