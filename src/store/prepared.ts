// Queries that every API call runs, compiled once per database rather than on each call: Kysely
// builds and compiles a query object each time, which costs more than SQLite takes to answer.
import { CompiledQuery, type Kysely } from 'kysely';
import type { Database, Db } from './schema.ts';
import type { DirectReader } from './sqlite/dialect.ts';

const compiled = new WeakMap<object, Map<string, string>>();
const directReaders = new WeakMap<object, () => DirectReader | null>();
const changeCounters = new WeakMap<object, () => string>();

/**
 * Lets runPrepared read from this database without Kysely's executor, and changeCounter tell
 * whether anything was committed since (SQLite only).
 */
export function registerDirectReader(
  db: Kysely<Database>,
  reader: () => DirectReader | null,
  counter: () => string,
): void {
  directReaders.set(db.getExecutor(), reader);
  changeCounters.set(db.getExecutor(), counter);
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

/** Rows read by runRemembered, for as long as the store's change counter stays where it was. */
const remembered = new WeakMap<object, { version: string; rows: Map<string, unknown[]> }>();
const REMEMBERED_MAX = 10_000;

/**
 * runPrepared, answered from memory while nothing has been committed to the store since the rows
 * were read (by this server, the CLI or any other process): a change is seen from the next call on,
 * as when reading the store each time. Where the store has no change counter (PostgreSQL, which
 * other servers write) or inside a transaction, it reads the store every time.
 */
export async function runRemembered<R>(
  db: Db,
  name: string,
  build: (db: Kysely<Database>) => { compile(): CompiledQuery },
  parameters: readonly (string | number)[],
): Promise<readonly R[]> {
  const version = db.isTransaction ? null : changeCounter(db);
  if (version === null) return runPrepared<R>(db, name, build, parameters);
  const key = db.getExecutor();
  let memory = remembered.get(key);
  if (memory?.version !== version) {
    memory = { version, rows: new Map() };
    remembered.set(key, memory);
  }
  const id = `${name}\u0000${parameters.join('\u0000')}`;
  const known = memory.rows.get(id);
  if (known) return known as R[];
  const rows = await runPrepared<R>(db, name, build, parameters);
  if (memory.rows.size >= REMEMBERED_MAX) memory.rows.clear();
  memory.rows.set(id, rows);
  return rows;
}

/**
 * A value that changes whenever any connection (this server's writer, the CLI, another process)
 * commits a change to the SQLite store; null where there is no such value (PostgreSQL), so that
 * nothing may be cached on it.
 */
export function changeCounter(db: Db): string | null {
  return changeCounters.get(db.getExecutor())?.() ?? null;
}

const sharedReads = new WeakMap<object, Promise<string>>();

/**
 * The change counter read for every call that asks before the event loop next reaches its check
 * phase, in that phase: one read for a whole batch of calls (under load, many arrive in one turn
 * of the loop), made after each of them had arrived, so that a change committed before a call was
 * sent is still seen by that call. Null where there is no counter (PostgreSQL).
 */
export function sharedChangeCounter(db: Db): Promise<string> | null {
  const key = db.getExecutor();
  const read = changeCounters.get(key);
  if (!read) return null;
  let shared = sharedReads.get(key);
  if (!shared) {
    shared = new Promise<string>((resolve, reject) =>
      setImmediate(() => {
        sharedReads.delete(key);
        try {
          resolve(read());
        } catch (error) {
          reject(error);
        }
      }),
    );
    sharedReads.set(key, shared);
  }
  return shared;
}
