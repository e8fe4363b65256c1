// A Kysely dialect over node:sqlite with two connections to one WAL database: a writer, which
// transactions and writes take in turn, and a reader, on which plain SELECTs run at once, seeing
// the last committed state. So an API call that only reads (authentication, listings) never waits
// behind another call's transaction.
import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import {
  type CompiledQuery,
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
import { Connection, type Outcome } from './connection.js';

/** The writer connection: on the event loop, or in a thread of its own (a server's). */
interface Writer {
  execute<R>(sql: string, parameters: readonly unknown[]): Outcome<R> | Promise<Outcome<R>>;
  close(): Promise<void>;
}

function onLoop(connection: Connection): Writer {
  return {
    execute: (sql, parameters) => connection.execute(sql, parameters),
    async close() {
      if (connection.db.isOpen) connection.db.close();
    },
  };
}

/** The writer connection in its own thread (writer-thread.js): statements go there one at a time. */
async function inThread(path: string, report: (error: string) => void): Promise<Writer> {
  const worker = new Worker(new URL('./writer-thread.js', import.meta.url), {
    workerData: { path },
    // It holds a statement and its answer at a time: a small young generation is enough.
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
  });
  const pending = new Map<
    number,
    { resolve: (outcome: Outcome<unknown>) => void; reject: (error: Error) => void }
  >();
  let broken: Error | null = null;
  let next = 0;
  const fail = (error: Error) => {
    if (!broken) report(`the store's writer thread stopped: ${error.message}`);
    broken ??= error;
    for (const { reject } of pending.values()) reject(broken);
    pending.clear();
  };
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  worker.on('message', (answer: { id: number; outcome?: Outcome<unknown>; error?: { message: string } }) => {
    const waiting = pending.get(answer.id);
    pending.delete(answer.id);
    if (answer.error) waiting?.reject(Object.assign(new Error(answer.error.message), answer.error));
    else waiting?.resolve(answer.outcome!);
  });
  worker.on('error', fail);
  worker.on('exit', () => fail(new Error('the store writer thread has stopped')));
  return {
    execute<R>(sql: string, parameters: readonly unknown[]): Promise<Outcome<R>> {
      if (broken) return Promise.reject(broken);
      const id = next++;
      return new Promise<Outcome<R>>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (outcome: Outcome<unknown>) => void, reject });
        worker.postMessage({ id, sql, parameters });
      });
    },
    async close() {
      if (broken) return;
      broken = new Error('the store is closed');
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('close');
      await exited;
    },
  };
}

function queryResult<R>(outcome: Outcome<R>): QueryResult<R> {
  if (outcome.changes === undefined) return { rows: outcome.rows };
  return {
    rows: [],
    numAffectedRows: BigInt(outcome.changes),
    insertId: BigInt(outcome.lastInsertRowid ?? 0),
  };
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
    for (const row of this.#driver.reader.iterate<R>(query.sql, query.parameters)) yield { rows: [row] };
  }
}

class NodeSqliteDriver implements Driver {
  #writer: Writer;
  readonly reader: Connection;
  readonly #lock = new WriterLock();

  constructor(writer: DatabaseSync, reader: DatabaseSync) {
    this.#writer = onLoop(new Connection(writer));
    this.reader = new Connection(reader);
  }

  async #write<R>(sql: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
    return queryResult(await this.#writer.execute<R>(sql, parameters));
  }

  async execute<R>(handle: Handle, query: CompiledQuery): Promise<QueryResult<R>> {
    if (handle.inTransaction) return this.#write<R>(query.sql, query.parameters);
    if (SelectQueryNode.is(query.query))
      return queryResult(this.reader.execute<R>(query.sql, query.parameters));
    // A write outside a transaction must not land inside another caller's open one.
    await this.#lock.acquire();
    try {
      return await this.#write<R>(query.sql, query.parameters);
    } finally {
      this.#lock.release();
    }
  }

  /** Moves the writer connection into a thread of its own, between two holders of the writer. */
  async writeInThread(path: string, report: (error: string) => void): Promise<void> {
    await this.#lock.acquire();
    try {
      const thread = await inThread(path, report);
      await this.#writer.close();
      this.#writer = thread;
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
      await this.#writer.execute('begin immediate', []);
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
      await this.#writer.execute(command, []);
    } finally {
      handle.inTransaction = false;
      this.#lock.release();
    }
  }

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {
    await this.#writer.close();
    if (this.reader.db.isOpen) this.reader.db.close();
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
      driver.reader.execute<R>(sql, parameters).rows;
    this.writeInThread = (path, report) => driver.writeInThread(path, report);
    return driver;
  }

  directReader: DirectReader | null = null;
  /** Moves the writer connection into a thread of its own (a long-running server's). */
  writeInThread: ((path: string, report: (error: string) => void) => Promise<void>) | null = null;

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
