// Dovecot's logins and users, in an SQLite database its auth reads on every lookup (driver sql,
// sqlite): a change is live the moment its transaction commits, and Dovecot is never reloaded for
// one. A passwd-file is looked at no more than once a second, so every change took a reload, and
// every reload cut what Dovecot was doing: a delivery by LMTP whose user lookup met it failed for
// the moment ("auth-master: Disconnected unexpectedly"), and Postfix kept the message back for
// five minutes; in `berth sandbox`, eight of twenty messages delivered while another account was
// suspended and unsuspended.
//
// The rows are the account's lines of those tables (lines.ts), one per login, the columns
// separated by tabs. Written ahead (WAL): a commit costs a third of a millisecond where a rollback
// journal cost four, and Dovecot's lookups never wait for one. Deleted rows are overwritten
// (secure_delete; an index B-tree keeps each login once, no copy of it in its inner pages), and
// once an account's rows are all gone the log, which still holds the pages as they were written,
// is emptied: a removed account leaves none of its names or hashes in the files. Never VACUUM:
// it changes the schema, and Dovecot's first lookup after it fails ("database schema has
// changed"), a delivery then kept back for five minutes.
import { lstatSync } from 'node:fs';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { keepFile } from '../files.ts';

export type DovecotTable = 'logins' | 'users';

/** Each table's columns, in the order of a row's fields; the first is the login. */
const COLUMNS: Record<DovecotTable, string[]> = {
  logins: ['login', 'password', 'user'],
  users: ['login', 'uid', 'gid', 'home', 'quota_rule'],
};

const SCHEMA = `
CREATE TABLE IF NOT EXISTS logins (
  login TEXT PRIMARY KEY, password TEXT NOT NULL, user TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS users (
  login TEXT PRIMARY KEY, uid INTEGER NOT NULL, gid INTEGER NOT NULL, home TEXT NOT NULL, quota_rule TEXT
) WITHOUT ROWID;
`;

/** The queries Dovecot's sql driver runs (its `%u` is escaped for SQL by Dovecot). */
export function dovecotQueries(database: string): string {
  return [
    'driver = sqlite',
    `connect = ${database}`,
    'default_pass_scheme = CRYPT',
    "password_query = SELECT password, user FROM logins WHERE login = '%u'",
    "user_query = SELECT home, uid, gid, quota_rule FROM users WHERE login = '%u'",
    '',
  ].join('\n');
}

/** The login a row is for: its first field. */
export function loginOf(row: string): string {
  const end = row.indexOf('\t');
  return end < 0 ? row : row.slice(0, end);
}

/** A row's values for its table's columns (an empty last field: NULL). */
function valuesOf(table: DovecotTable, row: string): (string | null)[] {
  const fields = row.split('\t');
  return COLUMNS[table].map((_, i) => (fields[i] === undefined || fields[i] === '' ? null : fields[i]!));
}

/**
 * The database at `path` (the real path), made when missing, root's and `gid`'s to read (mode
 * 0640) like the files it replaces. Opened when first used, and again when the file was replaced.
 */
export function dovecotDatabase(path: string, gid: number | undefined) {
  let db: DatabaseSync | null = null;
  let inode = 0n;
  /** `PRAGMA data_version` after this process last committed: it moves when another one writes. */
  let version = -1;
  let statements: {
    put: Record<DovecotTable, StatementSync>;
    remove: Record<DovecotTable, StatementSync>;
  } | null = null;

  function open(): DatabaseSync {
    const now = lstatSync(path, { bigint: true, throwIfNoEntry: false })?.ino ?? 0n;
    if (db && now === inode) return db;
    db?.close();
    // Never through a link (the directory is root's; no account can plant one there, still).
    keepFile(path, 0o640, gid);
    db = new DatabaseSync(path);
    db.exec(
      'PRAGMA secure_delete = ON; PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA temp_store = MEMORY; PRAGMA busy_timeout = 5000;',
    );
    db.exec(SCHEMA);
    inode = lstatSync(path, { bigint: true }).ino;
    const each = (make: (table: DovecotTable) => string) =>
      Object.fromEntries(
        (Object.keys(COLUMNS) as DovecotTable[]).map((t) => [t, db!.prepare(make(t))]),
      ) as Record<DovecotTable, StatementSync>;
    statements = {
      put: each(
        (t) =>
          `INSERT OR REPLACE INTO ${t} (${COLUMNS[t].join(', ')}) VALUES (${COLUMNS[t].map(() => '?').join(', ')})`,
      ),
      remove: each((t) => `DELETE FROM ${t} WHERE login = ?`),
    };
    version = -1;
    return db;
  }

  function dataVersion(handle: DatabaseSync): number {
    return Number((handle.prepare('PRAGMA data_version').get() as { data_version: number }).data_version);
  }

  /** Runs `change` in one transaction. */
  function transaction(handle: DatabaseSync, change: () => void): void {
    handle.exec('BEGIN IMMEDIATE');
    try {
      change();
      handle.exec('COMMIT');
    } catch (error) {
      handle.exec('ROLLBACK');
      throw error;
    }
    version = dataVersion(handle);
  }

  /** Whether the log still holds rows that went (a checkpoint a reader kept from finishing). */
  let unforgotten = false;

  /** The log copied into the database and emptied (else again after the next commit). */
  function forget(handle: DatabaseSync): void {
    const { busy } = handle.prepare('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number };
    unforgotten = busy !== 0;
  }

  return {
    path,
    /** Whether the tables are as this process last left them (no other writer since, same file). */
    current(): boolean {
      const handle = open();
      return version >= 0 && dataVersion(handle) === version;
    },
    /** Whether `table` has a row for `login`. */
    has(table: DovecotTable, login: string): boolean {
      return open().prepare(`SELECT 1 FROM ${table} WHERE login = ?`).get(login) !== undefined;
    },
    /** Every row of `table`, by login. */
    rows(table: DovecotTable): Map<string, string> {
      const handle = open();
      const rows = handle.prepare(`SELECT ${COLUMNS[table].join(', ')} FROM ${table}`).all() as Record<
        string,
        string | number | null
      >[];
      return new Map(
        rows.map((row) => [
          String(row.login),
          COLUMNS[table].map((column) => (row[column] === null ? '' : String(row[column]))).join('\t'),
        ]),
      );
    },
    /**
     * Makes `table` hold `rows` exactly (a login listed twice keeps its first row, as a
     * passwd-file did); answers whether anything changed.
     */
    sync(table: DovecotTable, rows: readonly string[]): boolean {
      const want = new Map<string, string>();
      for (const row of rows) if (!want.has(loginOf(row))) want.set(loginOf(row), row);
      const have = this.rows(table);
      const gone = [...have.keys()].filter((login) => !want.has(login));
      const put = [...want].filter(([login, row]) => have.get(login) !== row).map(([, row]) => row);
      const handle = open();
      if (gone.length === 0 && put.length === 0) {
        version = dataVersion(handle);
        return false;
      }
      transaction(handle, () => {
        for (const login of gone) statements!.remove[table].run(login);
        for (const row of put) statements!.put[table].run(...valuesOf(table, row));
      });
      if (gone.length > 0 || unforgotten) forget(handle);
      return true;
    },
    /**
     * Removes the rows of `gone` and writes `put`, by login, in one transaction; `removed`: an
     * account's rows all went, and the log is emptied.
     */
    apply(
      changes: ReadonlyMap<DovecotTable, { gone: ReadonlySet<string>; put: ReadonlyMap<string, string> }>,
      removed: boolean,
    ) {
      const handle = open();
      transaction(handle, () => {
        for (const [table, { gone, put }] of changes) {
          for (const login of gone) if (!put.has(login)) statements!.remove[table].run(login);
          for (const row of put.values()) statements!.put[table].run(...valuesOf(table, row));
        }
      });
      if (removed || unforgotten) forget(handle);
    },
    close(): void {
      db?.close();
      db = null;
      statements = null;
    },
  };
}

export type DovecotDatabase = ReturnType<typeof dovecotDatabase>;
