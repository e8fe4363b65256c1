// Failed authentications per source address, for the brute-force lock-out. Kept in the store so
// that every server sharing it counts the same failures.
import { sql } from 'kysely';
import { runPrepared } from './prepared.ts';
import type { AuthFailureTable, Db } from './schema.ts';

export interface FailureWindow {
  windowStartedMs: number;
  failures: number;
  lockedUntilMs: number;
}

export async function findFailures(db: Db, address: string): Promise<FailureWindow | undefined> {
  const [row] = await runPrepared<AuthFailureTable>(
    db,
    'findFailures',
    (d) => d.selectFrom('auth_failures').selectAll().where('address', '=', ''),
    [address],
  );
  return (
    row && {
      windowStartedMs: Number(row.window_started_ms),
      failures: Number(row.failures),
      lockedUntilMs: Number(row.locked_until_ms),
    }
  );
}

/**
 * Counts one failure in a single statement, so that servers sharing the store never lose a count:
 * a window older than `windowMs` starts again at one; reaching `maxFailures` locks until
 * now + `lockMs`. Returns the lock time (0 when not locked).
 */
export async function countFailure(
  db: Db,
  address: string,
  nowMs: number,
  settings: { maxFailures: number; windowMs: number; lockMs: number },
): Promise<number> {
  const expired = sql`auth_failures.window_started_ms <= ${nowMs - settings.windowMs}`;
  const failures = sql`case when ${expired} then 1 else auth_failures.failures + 1 end`;
  const firstLock = settings.maxFailures <= 1 ? nowMs + settings.lockMs : 0;
  const result = await sql<{ locked_until_ms: number | string }>`
    insert into auth_failures (address, window_started_ms, failures, locked_until_ms)
    values (${address}, ${nowMs}, 1, ${firstLock})
    on conflict (address) do update set
      failures = ${failures},
      window_started_ms = case when ${expired} then ${nowMs} else auth_failures.window_started_ms end,
      locked_until_ms = case when ${failures} >= ${settings.maxFailures} then ${nowMs + settings.lockMs}
                             else auth_failures.locked_until_ms end
    returning locked_until_ms`.execute(db);
  return Number(result.rows[0]?.locked_until_ms ?? 0);
}

export async function forgetExpiredFailures(db: Db, beforeMs: number): Promise<void> {
  await db
    .deleteFrom('auth_failures')
    .where('window_started_ms', '<', beforeMs)
    .where('locked_until_ms', '<', beforeMs)
    .execute();
}
