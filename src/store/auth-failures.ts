// Failed authentications per source address, for the brute-force lock-out. Kept in the store so
// that every server sharing it counts the same failures.
import type { Db } from './schema.ts';

export interface FailureWindow {
  windowStartedMs: number;
  failures: number;
  lockedUntilMs: number;
}

export async function findFailures(db: Db, address: string): Promise<FailureWindow | undefined> {
  const row = await db
    .selectFrom('auth_failures')
    .selectAll()
    .where('address', '=', address)
    .executeTakeFirst();
  return (
    row && {
      windowStartedMs: Number(row.window_started_ms),
      failures: Number(row.failures),
      lockedUntilMs: Number(row.locked_until_ms),
    }
  );
}

export async function saveFailures(db: Db, address: string, window: FailureWindow): Promise<void> {
  const values = {
    window_started_ms: window.windowStartedMs,
    failures: window.failures,
    locked_until_ms: window.lockedUntilMs,
  };
  await db
    .insertInto('auth_failures')
    .values({ address, ...values })
    .onConflict((oc) => oc.column('address').doUpdateSet(values))
    .execute();
}

export async function forgetExpiredFailures(db: Db, beforeMs: number): Promise<void> {
  await db
    .deleteFrom('auth_failures')
    .where('window_started_ms', '<', beforeMs)
    .where('locked_until_ms', '<', beforeMs)
    .execute();
}
