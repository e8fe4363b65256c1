// Queries that every API call runs, compiled once per database rather than on each call: Kysely
// builds and compiles a query object each time, which costs more than SQLite takes to answer.
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database, Db } from './schema.ts';
import type { DirectReader } from './sqlite/dialect.ts';

const compiled = new WeakMap<object, Map<string, string>>();
const directReaders = new WeakMap<object, () => DirectReader | null>();

/** Lets runPrepared read from this database without Kysely's executor (SQLite only). */
export function registerDirectReader(db: Kysely<Database>, reader: () => DirectReader | null): void {
  directReaders.set(db.getExecutor(), reader);
}

/**
 * Runs `build`'s SQL (compiled the first time for this database) with `parameters` in place of
 * the ones it was compiled with.
 */
export async function runPrepared<R>(
  db: Db,
  name: string,
  build: (db: Kysely<Database>) => { compile(): CompiledQuery },
  parameters: readonly unknown[],
): Promise<R[]> {
  const key = db.getExecutor();
  let queries = compiled.get(key);
  if (!queries) {
    queries = new Map();
    compiled.set(key, queries);
  }
  let sql = queries.get(name);
  if (sql === undefined) {
    sql = build(db as Kysely<Database>).compile().sql;
    queries.set(name, sql);
  }
  // Outside a transaction a read may go straight to SQLite's reader; inside one it must see the
  // transaction's own writes, so it goes through Kysely.
  const direct = db.isTransaction ? null : directReaders.get(key)?.();
  if (direct) return direct<R>(sql, parameters);
  const result = await db.executeQuery<R>(CompiledQuery.raw(sql, [...parameters]));
  return result.rows;
}

/**
 * A number that changes whenever any connection (this server's writer, the CLI, another process)
 * commits a change to the SQLite store; null where there is no such number (PostgreSQL), so that
 * nothing may be cached on it.
 */
export function changeCounter(db: Db): number | null {
  const direct = directReaders.get(db.getExecutor())?.();
  if (!direct) return null;
  const [row] = direct<{ data_version: number }>('PRAGMA data_version', []);
  return row ? Number(row.data_version) : null;
}
