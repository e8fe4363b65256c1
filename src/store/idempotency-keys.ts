// Idempotency keys: the answer given to a state-changing call, kept for 24 hours under the key the
// caller sent among its principal's keys (their owner), so that a retry gets the same answer
// instead of acting again.
import { uniqueViolation } from './errors.ts';
import type { Db, IdempotencyKeyTable } from './schema.ts';

export type StoredAnswer = Pick<IdempotencyKeyTable, 'request_hash' | 'status' | 'body' | 'created_ms'>;

export async function findAnswer(db: Db, owner: string, key: string): Promise<StoredAnswer | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'status', 'body', 'created_ms'])
    .where('owner', '=', owner)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && { ...row, status: Number(row.status), created_ms: Number(row.created_ms) };
}

/** Claims the key for a call about to run; false when another call holds it already. */
export async function claimKey(
  db: Db,
  owner: string,
  key: string,
  requestHash: string,
  nowMs: number,
): Promise<boolean> {
  try {
    await db
      .insertInto('idempotency_keys')
      .values({ owner, key, request_hash: requestHash, status: 0, body: '', created_ms: nowMs })
      .execute();
    return true;
  } catch (error) {
    if (uniqueViolation(error)) return false;
    throw error;
  }
}

export async function storeAnswer(
  db: Db,
  owner: string,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status, body })
    .where('owner', '=', owner)
    .where('key', '=', key)
    .execute();
}

export async function releaseKey(db: Db, owner: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('owner', '=', owner).where('key', '=', key).execute();
}

export async function forgetAnswersBefore(db: Db, beforeMs: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_ms', '<', beforeMs).execute();
}
