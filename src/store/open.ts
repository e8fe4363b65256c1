// Opens the store named by the configuration and brings its schema up to date: the embedded SQLite
// file in the data directory, or a PostgreSQL database that several servers share.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely } from 'kysely';
import { type DialectName, migrate } from './migrations/index.ts';
import { postgresDialect } from './postgres/dialect.ts';
import type { Database } from './schema.ts';
import { NodeSqliteDialect } from './sqlite/dialect.ts';

export interface Store {
  db: Kysely<Database>;
  dialect: DialectName;
  close(): Promise<void>;
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//.test(location);
}

function openSqlite(path: string): Kysely<Database> {
  const sqlite = new DatabaseSync(path);
  // The server and the CLI share the file: WAL lets readers go on while one writes, and the busy
  // timeout makes a writer wait for the other instead of failing.
  sqlite.exec('PRAGMA busy_timeout = 10000');
  sqlite.exec('PRAGMA journal_mode = WAL');
  // FULL: a call answers 200 only once its change is on disk, power loss included.
  sqlite.exec('PRAGMA synchronous = FULL');
  sqlite.exec('PRAGMA foreign_keys = ON');
  return new Kysely<Database>({ dialect: new NodeSqliteDialect(sqlite) });
}

/**
 * Opens `<dataDir>/berth.db`, or the PostgreSQL database at `databaseUrl` when one is given, and
 * runs the migrations.
 */
export async function openStore(dataDir: string, databaseUrl: string | null = null): Promise<Store> {
  if (databaseUrl)
    return ready(new Kysely<Database>({ dialect: postgresDialect(databaseUrl).dialect }), 'postgres');
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  return openSqliteFile(join(dataDir, 'berth.db'));
}

/** Opens an SQLite store file (berth.db) and runs the migrations. */
export function openSqliteFile(path: string): Promise<Store> {
  return ready(openSqlite(path), 'sqlite');
}

async function ready(db: Kysely<Database>, dialect: DialectName): Promise<Store> {
  try {
    await migrate(db, dialect);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return { db, dialect, close: () => db.destroy() };
}
