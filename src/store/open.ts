// Opens the store named by the configuration and brings its schema up to date: the embedded SQLite
// file in the data directory, or a PostgreSQL database that several servers share.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { Kysely } from 'kysely';
import { type DialectName, migrate } from './migrations/index.ts';
import { registerDirectReader } from './prepared.ts';
import type { Database } from './schema.ts';
import { NodeSqliteDialect } from './sqlite/dialect.ts';
import { type WalIndex, walIndex } from './sqlite/wal-index.ts';

export interface Store {
  db: Kysely<Database>;
  dialect: DialectName;
  /**
   * Moves housekeeping off the event loop for a long-running server (SQLite's WAL checkpoints);
   * `report` hears of failures.
   */
  startBackgroundWork(report: (error: string) => void): void;
  close(): Promise<void>;
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

function openSqlite(path: string): Kysely<Database> {
  const writer = new DatabaseSync(path);
  writers.set(writer, path);
  // The server and the CLI share the file: WAL lets readers go on while one writes, and the busy
  // timeout makes a writer wait for the other instead of failing.
  writer.exec('PRAGMA busy_timeout = 10000');
  writer.exec('PRAGMA journal_mode = WAL');
  // FULL: a call answers 200 only once its change is on disk, power loss included.
  writer.exec('PRAGMA synchronous = FULL');
  writer.exec('PRAGMA foreign_keys = ON');
  const reader = new DatabaseSync(path);
  reader.exec('PRAGMA busy_timeout = 10000');
  reader.exec('PRAGMA query_only = ON');
  const dialect = new NodeSqliteDialect(writer, reader);
  const db = new Kysely<Database>({ dialect });
  const dataVersion = reader.prepare('PRAGMA data_version');
  const index = walIndex(path, () => String((dataVersion.get() as { data_version: number }).data_version));
  registerDirectReader(db, () => dialect.directReader, index.version);
  sqliteWriters.set(db, writer);
  walIndexes.set(db, index);
  return db;
}

const writers = new WeakMap<DatabaseSync, string>();
const walIndexes = new WeakMap<Kysely<Database>, WalIndex>();
const sqliteWriters = new WeakMap<Kysely<Database>, DatabaseSync>();

/** A checkpointing worker for a server's SQLite store; the writer then stops checkpointing itself. */
function checkpointer(db: Kysely<Database>, report: (error: string) => void): (() => Promise<void>) | null {
  const writer = sqliteWriters.get(db);
  const path = writer && writers.get(writer);
  if (!writer || !path) return null;
  const worker = new Worker(new URL('./sqlite/checkpointer.ts', import.meta.url), {
    workerData: { path, intervalMs: 1000 },
  });
  worker.unref();
  worker.on('message', (message: { error?: string }) => message.error && report(message.error));
  worker.on('error', (error) => report(String(error)));
  writer.exec('PRAGMA wal_autocheckpoint = 0');
  return async () => {
    writer.exec('PRAGMA wal_autocheckpoint = 1000');
    // Waited for: an unreferenced worker would let the process end before it has closed.
    worker.ref();
    worker.postMessage('stop');
    await new Promise((resolve) => worker.once('exit', resolve));
  };
}

/**
 * Opens `<dataDir>/berth.db`, or the PostgreSQL database at `databaseUrl` when one is given, and
 * runs the migrations.
 */
export async function openStore(dataDir: string, databaseUrl: string | null = null): Promise<Store> {
  if (databaseUrl) {
    // Loaded only when used: a single server on SQLite starts without the PostgreSQL client.
    const { postgresDialect } = await import('./postgres/dialect.ts');
    return ready(new Kysely<Database>({ dialect: postgresDialect(databaseUrl).dialect }), 'postgres');
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return openSqliteFile(join(dataDir, 'berth.db'));
}

/** Opens an SQLite store file (berth.db) and runs the migrations. */
export function openSqliteFile(path: string): Promise<Store> {
  // The store holds password hashes: readable by its owner only. SQLite gives its -wal and -shm
  // files the mode of the database file, so creating that one 0600 covers all three.
  if (!existsSync(path)) writeFileSync(path, '', { mode: 0o600, flag: 'wx' });
  return ready(openSqlite(path), 'sqlite');
}

async function ready(db: Kysely<Database>, dialect: DialectName): Promise<Store> {
  try {
    await migrate(db, dialect);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  let stopBackground: (() => Promise<void>) | null = null;
  return {
    db,
    dialect,
    startBackgroundWork(report) {
      stopBackground ??= checkpointer(db, report);
    },
    async close() {
      await stopBackground?.();
      await db.destroy();
      walIndexes.get(db)?.close();
    },
  };
}
