// A Kysely dialect over node:sqlite with two connections to one WAL database: a writer, which
// transactions and writes take in turn, and a reader, on which plain SELECTs run at once, seeing
// the last committed state. So an API call that only reads (authentication, listings) never waits
// behind another call's transaction.
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type Driver,
  type Kysely,
  type QueryResult,
  SelectQueryNode,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';

/** Runs compiled queries on one node:sqlite connection, with its prepared statements cached. */
class Connection {
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

  execute<R>(query: CompiledQuery): QueryResult<R> {
    const { statement, returnsRows } = this.#prepare(query.sql);
    const parameters = query.parameters as SQLInputValue[];
    if (returnsRows) return { rows: statement.all(...parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(...parameters);
    return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
  }

  *iterate<R>(query: CompiledQuery): Generator<R> {
    yield* this.#prepare(query.sql).statement.iterate(
      ...(query.parameters as SQLInputValue[]),
    ) as Iterable<R>;
  }
}

/** Hands the writer to one holder at a time, in order of asking. */
class WriterLock {
  #held = false;
  readonly #waiting: (() => void)[] = [];

  async acquire(): Promise<void> {
    if (!this.#held) {
      this.#held = true;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held = false;
  }
}

class Handle implements DatabaseConnection {
  readonly #driver: NodeSqliteDriver;
  inTransaction = false;

  constructor(driver: NodeSqliteDriver) {
    this.#driver = driver;
  }

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.#driver.execute<R>(this, query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    if (this.inTransaction || !SelectQueryNode.is(query.query)) {
      yield await this.executeQuery<R>(query);
      return;
    }
    for (const row of this.#driver.reader.iterate<R>(query)) yield { rows: [row] };
  }
}

class NodeSqliteDriver implements Driver {
  readonly writer: Connection;
  readonly reader: Connection;
  readonly #lock = new WriterLock();

  constructor(writer: DatabaseSync, reader: DatabaseSync) {
    this.writer = new Connection(writer);
    this.reader = new Connection(reader);
  }

  async execute<R>(handle: Handle, query: CompiledQuery): Promise<QueryResult<R>> {
    if (handle.inTransaction) return this.writer.execute<R>(query);
    if (SelectQueryNode.is(query.query)) return this.reader.execute<R>(query);
    // A write outside a transaction must not land inside another caller's open one.
    await this.#lock.acquire();
    try {
      return this.writer.execute<R>(query);
    } finally {
      this.#lock.release();
    }
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return new Handle(this);
  }

  // IMMEDIATE takes the write lock at the start, so a transaction that reads then writes cannot
  // fail half-way because another process (the CLI) wrote in between.
  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#lock.acquire();
    try {
      this.writer.execute(CompiledQuery.raw('begin immediate'));
    } catch (error) {
      this.#lock.release();
      throw error;
    }
    (connection as Handle).inTransaction = true;
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#end(connection as Handle, 'commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#end(connection as Handle, 'rollback');
  }

  async #end(handle: Handle, command: 'commit' | 'rollback'): Promise<void> {
    try {
      this.writer.execute(CompiledQuery.raw(command));
    } finally {
      handle.inTransaction = false;
      this.#lock.release();
    }
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    for (const connection of [this.reader, this.writer]) if (connection.db.isOpen) connection.db.close();
  }
}

/** The writer's adapter, saying that Kysely need not serialise connections itself. */
class ConcurrentSqliteAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}

/**
 * Reads straight from the reader connection, without Kysely's executor (its promise chain costs
 * more than SQLite takes to answer): for the few queries every API call runs.
 */
export type DirectReader = <R>(sql: string, parameters: readonly unknown[]) => R[];

export class NodeSqliteDialect implements Dialect {
  readonly #writer: DatabaseSync;
  readonly #reader: DatabaseSync;

  constructor(writer: DatabaseSync, reader: DatabaseSync) {
    this.#writer = writer;
    this.#reader = reader;
  }

  createDriver(): Driver {
    const driver = new NodeSqliteDriver(this.#writer, this.#reader);
    this.directReader = <R>(sql: string, parameters: readonly unknown[]) =>
      driver.reader.execute<R>(CompiledQuery.raw(sql, [...parameters])).rows;
    return driver;
  }

  directReader: DirectReader | null = null;

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }

  createAdapter() {
    return new ConcurrentSqliteAdapter();
  }

  // biome-ignore lint/suspicious/noExplicitAny: Kysely's introspector takes any database shape.
  createIntrospector(db: Kysely<any>) {
    return new SqliteIntrospector(db);
  }
}
