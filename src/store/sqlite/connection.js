// @ts-check
// One node:sqlite connection with its prepared statements cached, as the dialect's reader and
// writer use it, on the event loop or in the writer's own thread. JavaScript typed by JSDoc, and
// checked as the TypeScript is: the writer's thread loads only this and writer-thread.js, so it
// never starts a TypeScript stripper of its own (some 20 MB a thread).
import { DatabaseSync } from 'node:sqlite';

/**
 * What a statement gave back: its rows, or what it changed.
 * @template R
 * @typedef {{ rows: R[]; changes?: number | bigint; lastInsertRowid?: number | bigint }} Outcome
 */

/** @typedef {import('node:sqlite').SQLInputValue} SQLInputValue */

export class Connection {
  /**
   * Whether a statement returns rows is asked once: columns() builds its answer anew each time.
   * @type {Map<string, { statement: import('node:sqlite').StatementSync; returnsRows: boolean }>}
   */
  #statements = new Map();

  /** @param {DatabaseSync} db */
  constructor(db) {
    /** @readonly */
    this.db = db;
  }

  /** @param {string} sql */
  #prepare(sql) {
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

  /**
   * @template R
   * @param {string} sql
   * @param {readonly unknown[]} parameters
   * @returns {Outcome<R>}
   */
  execute(sql, parameters) {
    const { statement, returnsRows } = this.#prepare(sql);
    const values = /** @type {SQLInputValue[]} */ (parameters);
    if (returnsRows) return { rows: /** @type {R[]} */ (statement.all(...values)) };
    const { changes, lastInsertRowid } = statement.run(...values);
    return { rows: [], changes, lastInsertRowid };
  }

  /**
   * @template R
   * @param {string} sql
   * @param {readonly unknown[]} parameters
   * @returns {Generator<R>}
   */
  *iterate(sql, parameters) {
    const values = /** @type {SQLInputValue[]} */ (parameters);
    yield* /** @type {Iterable<R>} */ (this.#prepare(sql).statement.iterate(...values));
  }
}

/**
 * Opens the store's writer connection. The server and the CLI share the file: WAL lets readers go
 * on while one writes, and the busy timeout makes a writer wait for the other instead of failing.
 * SQLite copies the WAL back into the database (a checkpoint) on the writer, at the commit that
 * takes the WAL past 1,000 pages: in a server, that is in the writer's own thread.
 * @param {string} path
 * @returns {DatabaseSync}
 */
export function openWriter(path) {
  const writer = new DatabaseSync(path);
  writer.exec('PRAGMA busy_timeout = 10000');
  writer.exec('PRAGMA journal_mode = WAL');
  // FULL: a call answers 200 only once its change is on disk, power loss included.
  writer.exec('PRAGMA synchronous = FULL');
  writer.exec('PRAGMA foreign_keys = ON');
  return writer;
}
