// Account holders' panel sessions in the store (CONTRACT §14), so that every server sharing it
// knows them; rows are mapped to HolderSession here only.
import type { Db } from './schema.ts';

export type HolderVia = 'panel' | 'sso';

export interface HolderSession {
  idHash: string;
  user: string;
  /** When the session's account was made (Account.setupAt): another account of its name is not it. */
  accountSetupMs: number;
  via: HolderVia;
  csrf: string;
  createdMs: number;
  lastSeenMs: number;
}

export async function insertHolderSession(db: Db, session: HolderSession): Promise<void> {
  await db
    .insertInto('holder_sessions')
    .values({
      id_hash: session.idHash,
      user: session.user,
      account_setup_ms: session.accountSetupMs,
      via: session.via,
      csrf: session.csrf,
      created_ms: session.createdMs,
      last_seen_ms: session.lastSeenMs,
    })
    .execute();
}

export async function findHolderSession(db: Db, idHash: string): Promise<HolderSession | undefined> {
  const row = await db
    .selectFrom('holder_sessions')
    .selectAll()
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  return (
    row && {
      idHash: row.id_hash,
      user: row.user,
      accountSetupMs: Number(row.account_setup_ms),
      via: row.via === 'sso' ? 'sso' : 'panel',
      csrf: row.csrf,
      createdMs: Number(row.created_ms),
      lastSeenMs: Number(row.last_seen_ms),
    }
  );
}

/**
 * Ends every panel session of the account `user`, but the one whose id hash is `exceptIdHash`:
 * passwd ends them all, the holder's own change_password all but the session it came from
 * (CONTRACT §14). Inside a transaction, they end with its commit.
 */
export async function endHolderSessions(db: Db, user: string, exceptIdHash?: string): Promise<void> {
  let query = db.deleteFrom('holder_sessions').where('user', '=', user);
  if (exceptIdHash !== undefined) query = query.where('id_hash', '!=', exceptIdHash);
  await query.execute();
}
