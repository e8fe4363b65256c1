// Idempotency keys: the answer given to a state-changing call, kept for 24 hours under the key the
// caller sent, so that a retry gets the same answer instead of acting again.
import { uniqueViolation } from './errors.ts';
import type { Db, IdempotencyKeyTable } from './schema.ts';

export type StoredAnswer = Pick<IdempotencyKeyTable, 'request_hash' | 'status' | 'body' | 'created_ms'>;

export async function findAnswer(db: Db, apiUser: string, key: string): Promise<StoredAnswer | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'status', 'body', 'created_ms'])
    .where('api_user', '=', apiUser)
    .where('key', '=', key)
    .executeTakeFirst();
  return row && { ...row, status: Number(row.status), created_ms: Number(row.created_ms) };
}

/** Claims the key for a call about to run; false when another call holds it already. */
export async function claimKey(
  db: Db,
  apiUser: string,
  key: string,
  requestHash: string,
  nowMs: number,
): Promise<boolean> {
  try {
    await db
      .insertInto('idempotency_keys')
      .values({ api_user: apiUser, key, request_hash: requestHash, status: 0, body: '', created_ms: nowMs })
      .execute();
    return true;
  } catch (error) {
    if (uniqueViolation(error)) return false;
    throw error;
  }
}

export async function storeAnswer(
  db: Db,
  apiUser: string,
  key: string,
  status: number,
  body: string,
): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ status, body })
    .where('api_user', '=', apiUser)
    .where('key', '=', key)
    .execute();
}

export async function releaseKey(db: Db, apiUser: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('api_user', '=', apiUser).where('key', '=', key).execute();
}

export async function forgetAnswersBefore(db: Db, beforeMs: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('created_ms', '<', beforeMs).execute();
}
