// The fleet's uids (CONTRACT §10): each account gets one no account ever had, from one row every
// server of the fleet shares. Taken in createacct's transaction: the row is locked until it
// commits (PostgreSQL) or the write is the only one (SQLite), so two servers never take the same.
import { sql } from 'kysely';
import type { Db } from './schema.ts';

export interface UidRange {
  /** The lowest uid an account may get (below it, the system's own users and people). */
  min: number;
  /** The highest. */
  max: number;
}

export class UidsExhausted extends Error {
  override name = 'UidsExhausted';
}

/** Takes the next uid: the mark or the range's start, whichever is higher; the mark moves past it. */
export async function takeUid(db: Db, range: UidRange): Promise<number> {
  const row = await db
    .updateTable('uid_mark')
    .set({
      next_uid: sql<number>`(case when next_uid < ${range.min} then ${range.min} else next_uid end) + 1`,
    })
    .where('name', '=', 'accounts')
    .returning('next_uid')
    .executeTakeFirstOrThrow();
  const uid = Number(row.next_uid) - 1;
  // The mark stays where it went: a refused createacct rolls it back with everything else.
  if (uid > range.max)
    throw new UidsExhausted(`every uid from ${range.min} to ${range.max} was given (uid_max)`);
  return uid;
}

/** Moves the mark above `uid` (one a server's system has), never down. */
export async function raiseUidMark(db: Db, uid: number): Promise<void> {
  await db
    .updateTable('uid_mark')
    .set({ next_uid: uid + 1 })
    .where('name', '=', 'accounts')
    .where('next_uid', '<=', uid)
    .execute();
}

/** Records the uid an account made before uids were kept has on its server's system. */
export async function recordUid(db: Db, user: string, uid: number): Promise<void> {
  await db.updateTable('accounts').set({ uid }).where('user', '=', user).where('uid', 'is', null).execute();
}

/** The accounts of a server whose uid is not recorded yet. */
export async function accountsWithoutUid(db: Db, server: string): Promise<string[]> {
  const rows = await db
    .selectFrom('accounts')
    .select('user')
    .where('server', '=', server)
    .where('uid', 'is', null)
    .execute();
  return rows.map((row) => row.user);
}
