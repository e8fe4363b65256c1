// The portal's `root` password, kept as a SHA-512 crypt hash in the store's settings.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { parsePassword } from '../core/values.ts';
import { type Actor, audited } from '../operations/audited.ts';
import { generatePassword } from '../operations/common.ts';
import type { Services } from '../services.ts';
import { deleteAllSessions } from '../store/portal-sessions.ts';
import type { Db } from '../store/schema.ts';
import { getSetting, setSetting } from '../store/settings.ts';
import type { CryptPool } from './crypt-pool.ts';

const KEY = 'portal_password_hash';

/** Where serve leaves a portal password it made, in the data directory, until one is set. */
export const PORTAL_PASSWORD_FILE = 'portal-password';

/**
 * Sets the password (audited), ends every portal session, here and on any server sharing the
 * store, and removes the file a generated password was left in (`dataDir`).
 */
export async function setPortalPassword(
  services: Pick<Services, 'store' | 'crypt' | 'config'>,
  password: string,
  actor: Actor,
): Promise<void> {
  const { db } = services.store;
  await audited(db, actor, 'admin set-password', null, async () => {
    await setSetting(db, KEY, await services.crypt.hash(parsePassword('password', password)));
    await deleteAllSessions(db);
  });
  rmSync(join(services.config.dataDir, PORTAL_PASSWORD_FILE), { force: true });
}

/** How a generated password is shown to the administrator, once. */
export function portalPasswordNotice(password: string): string {
  return `Portal password for root (shown once; change it with "berth admin set-password"): ${password}`;
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
