// Failed authentications per source address, for the brute-force lock-out. Kept in the store so
// that every server sharing it counts the same failures. Each failure is a row; a lock-out is a
// row of its own, so a count is never lost however many servers record failures at once.
import { runRemembered } from './prepared.ts';
import type { AuthLockTable, Db } from './schema.ts';

/** Until when the address is locked out (ms since the epoch); 0 when it never was. */
export async function findLock(db: Db, address: string): Promise<number> {
  const [row] = await runRemembered<AuthLockTable>(
    db,
    'findLock',
    (d) => d.selectFrom('auth_locks').selectAll().where('address', '=', ''),
    [address],
  );
  return row ? Number(row.locked_until_ms) : 0;
}

/**
 * Counts one failure: when the address has `maxFailures` failures within the `windowMs` before
 * now (this one included), it is locked until now + `lockMs`. Returns that count and the lock time
 * (0: none).
 */
export async function countFailure(
  db: Db,
  address: string,
  nowMs: number,
  settings: { maxFailures: number; windowMs: number; lockMs: number },
): Promise<{ failures: number; lockedUntilMs: number }> {
  await db.insertInto('auth_failure_times').values({ address, at_ms: nowMs }).execute();
  const row = await db
    .selectFrom('auth_failure_times')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('address', '=', address)
    .where('at_ms', '>', nowMs - settings.windowMs)
    .executeTakeFirstOrThrow();
  const failures = Number(row.n);
  if (failures < settings.maxFailures) return { failures, lockedUntilMs: 0 };
  const lockedUntilMs = nowMs + settings.lockMs;
  await db
    .insertInto('auth_locks')
    .values({ address, locked_until_ms: lockedUntilMs })
    .onConflict((oc) => oc.column('address').doUpdateSet({ locked_until_ms: lockedUntilMs }))
    .execute();
  return { failures, lockedUntilMs };
}

/** Forgets failures that left the window and locks that have ended. */
export async function forgetExpiredFailures(db: Db, nowMs: number, windowMs: number): Promise<void> {
  await db
    .deleteFrom('auth_failure_times')
    .where('at_ms', '<=', nowMs - windowMs)
    .execute();
  await db.deleteFrom('auth_locks').where('locked_until_ms', '<', nowMs).execute();
}
