// Opens the store named by the configuration and brings its schema up to date.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely } from 'kysely';
import { migrate } from './migrations/index.ts';
import type { Database } from './schema.ts';
import { NodeSqliteDialect } from './sqlite/dialect.ts';

export interface Store {
  db: Kysely<Database>;
  dialect: 'sqlite' | 'postgres';
  close(): Promise<void>;
}

export async function openStore(dataDir: string): Promise<Store> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const sqlite = new DatabaseSync(join(dataDir, 'berth.db'));
  // The server and the CLI share the file: WAL lets readers go on while one writes, and the busy
  // timeout makes a writer wait for the other instead of failing.
  sqlite.exec('PRAGMA busy_timeout = 10000');
  sqlite.exec('PRAGMA journal_mode = WAL');
  // FULL: a call answers 200 only once its change is on disk, power loss included.
  sqlite.exec('PRAGMA synchronous = FULL');
  sqlite.exec('PRAGMA foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new NodeSqliteDialect(sqlite) });
  await migrate(db, 'sqlite');
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}
