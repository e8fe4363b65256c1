// One node:sqlite connection with its prepared statements cached, as the dialect's reader and
// writer use it, on the event loop or in the writer's own thread.
import { DatabaseSync, type SQLInputValue, type StatementSync } from 'node:sqlite';

/** What a statement gave back: its rows, or what it changed. */
export interface Outcome<R> {
  rows: R[];
  changes?: number | bigint;
  lastInsertRowid?: number | bigint;
}

export class Connection {
  readonly db: DatabaseSync;
  // Whether a statement returns rows is asked once: columns() builds its answer anew each time.
  readonly #statements = new Map<string, { statement: StatementSync; returnsRows: boolean }>();

  constructor(db: DatabaseSync) {
    this.db = db;
  }

  #prepare(sql: string): { statement: StatementSync; returnsRows: boolean } {
    let prepared = this.#statements.get(sql);
    if (!prepared) {
      const statement = this.db.prepare(sql);
      prepared = { statement, returnsRows: statement.columns().length > 0 };
      // Bounded: queries come from a fixed set of shapes, but IN-lists vary in length.
      if (this.#statements.size > 500) this.#statements.clear();
      this.#statements.set(sql, prepared);
    }
    return prepared;
  }

  execute<R>(sql: string, parameters: readonly unknown[]): Outcome<R> {
    const { statement, returnsRows } = this.#prepare(sql);
    const values = parameters as SQLInputValue[];
    if (returnsRows) return { rows: statement.all(...values) as R[] };
    const { changes, lastInsertRowid } = statement.run(...values);
    return { rows: [], changes, lastInsertRowid };
  }

  *iterate<R>(sql: string, parameters: readonly unknown[]): Generator<R> {
    yield* this.#prepare(sql).statement.iterate(...(parameters as SQLInputValue[])) as Iterable<R>;
  }
}

/**
 * Opens the store's writer connection. The server and the CLI share the file: WAL lets readers go
 * on while one writes, and the busy timeout makes a writer wait for the other instead of failing.
 * SQLite copies the WAL back into the database (a checkpoint) on the writer, at the commit that
 * takes the WAL past 1,000 pages: in a server, that is in the writer's own thread.
 */
export function openWriter(path: string): DatabaseSync {
  const writer = new DatabaseSync(path);
  writer.exec('PRAGMA busy_timeout = 10000');
  writer.exec('PRAGMA journal_mode = WAL');
  // FULL: a call answers 200 only once its change is on disk, power loss included.
  writer.exec('PRAGMA synchronous = FULL');
  writer.exec('PRAGMA foreign_keys = ON');
  return writer;
}
