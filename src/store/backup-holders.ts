// The servers whose repositories hold snapshots of a user (CONTRACT §15; migration 0023): noted
// when a server takes one, kept after the account moves away or is removed.
import type { Db } from './schema.ts';

/** Notes that `server`'s repository holds a snapshot of `user` (once per user and server). */
export async function noteBackupHolder(db: Db, user: string, server: string, now: Date): Promise<void> {
  await db
    .insertInto('backup_holders')
    .values({ user, server, first_at: now.toISOString() })
    .onConflict((conflict) => conflict.columns(['user', 'server']).doNothing())
    .execute();
}

/** The servers that took snapshots of `user`, the first to take one first. */
export async function backupHoldersOf(db: Db, user: string): Promise<string[]> {
  const rows = await db
    .selectFrom('backup_holders')
    .select('server')
    .where('user', '=', user)
    .orderBy('first_at')
    .orderBy('server')
    .execute();
  return rows.map((r) => r.server);
}
