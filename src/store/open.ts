// Opens the store named by the configuration and brings its schema up to date: the embedded SQLite
// file in the data directory, or a PostgreSQL database that several servers share.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely } from 'kysely';
import { type DialectName, migrate } from './migrations/index.ts';
import { registerDirectReader } from './prepared.ts';
import type { Database } from './schema.ts';
import { openWriter } from './sqlite/connection.js';
import { NodeSqliteDialect } from './sqlite/dialect.ts';
import { type WalIndex, walIndex } from './sqlite/wal-index.ts';

export interface Store {
  db: Kysely<Database>;
  dialect: DialectName;
  /**
   * Moves the store's waits off the event loop for a long-running server (SQLite's writer, with its
   * commits and WAL checkpoints, into a thread of its own); `report` hears if that thread stops.
   */
  startBackgroundWork(report: (error: string) => void): Promise<void>;
  close(): Promise<void>;
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

function openSqlite(path: string): Kysely<Database> {
  const reader = new DatabaseSync(path);
  reader.exec('PRAGMA busy_timeout = 10000');
  reader.exec('PRAGMA query_only = ON');
  const dialect = new NodeSqliteDialect(openWriter(path), reader);
  const db = new Kysely<Database>({ dialect });
  const dataVersion = reader.prepare('PRAGMA data_version');
  const index = walIndex(path, () => String((dataVersion.get() as { data_version: number }).data_version));
  registerDirectReader(db, () => dialect.directReader, index.version);
  sqliteFiles.set(db, { path, dialect, index });
  return db;
}

const sqliteFiles = new WeakMap<
  Kysely<Database>,
  { path: string; dialect: NodeSqliteDialect; index: WalIndex }
>();

/**
 * A long-running server's SQLite store: the writer connection moves into a thread of its own, so
 * that neither a commit's wait for the disk nor a WAL checkpoint runs on the event loop.
 */
async function offTheLoop(db: Kysely<Database>, report: (error: string) => void): Promise<void> {
  const file = sqliteFiles.get(db);
  await file?.dialect.writeInThread?.(file.path, report);
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
  let background: Promise<void> | null = null;
  return {
    db,
    dialect,
    async startBackgroundWork(report) {
      background ??= offTheLoop(db, report);
      await background;
    },
    async close() {
      await background?.catch(() => {});
      await db.destroy();
      sqliteFiles.get(db)?.index.close();
    },
  };
}
