// What the portal's sessions and the holders' panel sessions do alike in the store: each table is
// keyed by the session id's hash and keeps when the session was last seen.
import type { Db } from './schema.ts';

/** The tables of sessions: the administrator's portal, the account holders' panel. */
export type SessionTable = 'portal_sessions' | 'holder_sessions';

// Both tables have `id_hash` and `last_seen_ms` alike: written as one of them for Kysely's types.
const as = (table: SessionTable) => table as 'portal_sessions';

export async function touchSession(
  db: Db,
  table: SessionTable,
  idHash: string,
  nowMs: number,
): Promise<void> {
  await db.updateTable(as(table)).set({ last_seen_ms: nowMs }).where('id_hash', '=', idHash).execute();
}

export async function deleteSession(db: Db, table: SessionTable, idHash: string): Promise<void> {
  await db.deleteFrom(as(table)).where('id_hash', '=', idHash).execute();
}

export async function deleteIdleSessions(db: Db, table: SessionTable, seenBeforeMs: number): Promise<void> {
  await db.deleteFrom(as(table)).where('last_seen_ms', '<', seenBeforeMs).execute();
}
