// `berth migrate-store`: moves a single-server installation's SQLite store into PostgreSQL, every
// row of every table in one transaction, then checks that the counts match.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { openSqliteFile, openStore, type Store } from './open.ts';
import type { Database } from './schema.ts';

// Every table of the store, in the order foreign keys need: packages before the accounts that use
// them, events before their deliveries. A table added to the store is added here (the type says so).
const TABLES = [
  'packages',
  'servers',
  'uid_mark',
  'accounts',
  'pending_changes',
  'fleet_commits',
  'domains',
  'mailboxes',
  'forwarders',
  'mailing_lists',
  'cron_jobs',
  'databases',
  'database_users',
  'ftp_accounts',
  'backup_jobs',
  'backup_holders',
  'api_users',
  'api_tokens',
  'audit_log',
  'auth_failure_times',
  'auth_locks',
  'settings',
  'portal_sessions',
  'holder_sessions',
  'sso_tokens',
  'idempotency_keys',
  'events',
  'deliveries',
] as const satisfies readonly (keyof Database)[];
type Table = (typeof TABLES)[number];
/** Compiles only while TABLES names every table of the store. */
const everyTable: [Exclude<keyof Database, Table>] extends [never] ? true : never = true;
void everyTable;

/** The rows a new store's migrations put in: replaced by the source's. */
const SEEDED: Partial<Record<Table, number>> = { packages: 1, uid_mark: 1 };

const BATCH = 500;

async function count(store: Store, table: Table): Promise<number> {
  const row = await store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function isEmpty(store: Store): Promise<boolean> {
  for (const table of TABLES) {
    // A new store has the default package and the uid mark, and nothing else.
    if ((await count(store, table)) > (SEEDED[table] ?? 0)) return false;
  }
  return true;
}

/** Copies the SQLite store at `from` (berth.db or its data directory) into the database at `to`. */
export async function migrateStore(from: string, to: string): Promise<Record<Table, number>> {
  const path = existsSync(from) && statSync(from).isDirectory() ? join(from, 'berth.db') : from;
  if (!existsSync(path)) throw new Error(`no SQLite store at ${path}`);
  const source = await openSqliteFile(path);
  try {
    const target = await openStore('', to);
    try {
      if (!(await isEmpty(target)))
        throw new Error('the PostgreSQL store is not empty: migrate into a new database');
      await target.db.transaction().execute(async (trx) => {
        for (const table of Object.keys(SEEDED) as Table[]) await trx.deleteFrom(table).execute();
        for (const table of TABLES) {
          // biome-ignore lint/suspicious/noExplicitAny: rows are copied as they are, table by table.
          const rows: any[] = await source.db.selectFrom(table).selectAll().execute();
          for (let i = 0; i < rows.length; i += BATCH) {
            await trx
              .insertInto(table)
              .values(rows.slice(i, i + BATCH))
              .execute();
          }
        }
        // The audit log keeps its ids; the sequence goes on after the highest.
        await sql`select setval(pg_get_serial_sequence('audit_log', 'id'), coalesce(max(id), 0) + 1, false) from audit_log`.execute(
          trx,
        );
      });
      const counts = {} as Record<Table, number>;
      for (const table of TABLES) {
        const [expected, copied] = [await count(source, table), await count(target, table)];
        if (expected !== copied)
          throw new Error(`${table}: ${expected} rows in SQLite but ${copied} in PostgreSQL`);
        counts[table] = copied;
      }
      return counts;
    } finally {
      await target.close();
    }
  } finally {
    await source.close();
  }
}
