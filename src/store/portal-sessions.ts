// Portal sessions in the store, so that every server sharing it knows them.
import type { Db } from './schema.ts';

export interface PortalSession {
  idHash: string;
  csrf: string;
  createdMs: number;
  lastSeenMs: number;
}

export async function insertSession(db: Db, session: PortalSession): Promise<void> {
  await db
    .insertInto('portal_sessions')
    .values({
      id_hash: session.idHash,
      csrf: session.csrf,
      created_ms: session.createdMs,
      last_seen_ms: session.lastSeenMs,
    })
    .execute();
}

export async function findSession(db: Db, idHash: string): Promise<PortalSession | undefined> {
  const row = await db
    .selectFrom('portal_sessions')
    .selectAll()
    .where('id_hash', '=', idHash)
    .executeTakeFirst();
  return (
    row && {
      idHash: row.id_hash,
      csrf: row.csrf,
      createdMs: Number(row.created_ms),
      lastSeenMs: Number(row.last_seen_ms),
    }
  );
}

/** Ends every session: the portal password changed. */
export async function deleteAllSessions(db: Db): Promise<void> {
  await db.deleteFrom('portal_sessions').execute();
}
