// The mail component's tables (mail/component.ts), made from every account's lines (lines.ts),
// which are kept in memory and made afresh for the account whose mail domain's record changed:
// Postfix's domains, mailboxes, senders and aliases, kept in memory by key and served to Postfix
// (socketmap.ts), so that a change is live the moment it is made, with no file written and no
// reload; postdrop's local-senders and OpenDKIM's keys and signing table, files written whole;
// Dovecot's logins and users, rows of a database written by login (dovecot-db.ts).
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { appendToFile, domainFile, giveFile, restoreFile, writeFileAtomic } from '../files.ts';
import { fileStamp, readParsed } from '../known-files.ts';
import { shadowPassword, shadowPasswords, systemGroupId } from '../passwd.ts';
import { type DovecotTable, dovecotDatabase, loginOf } from './dovecot-db.ts';
import {
  type AccountLines,
  accountLines,
  type FileTable,
  type MailDomain,
  PARTS,
  POSTFIX_TABLES,
  type PostfixTable,
  READERS,
  type TableReader,
} from './lines.ts';

/** The parts of the accounts' lines the table files are made of: each file is its own part. */
const FILE_PARTS = ['localSenders', 'keys', 'signing'] as const satisfies readonly FileTable[];
type FilePart = (typeof FILE_PARTS)[number];

/** Table files list the tenants: readable by root and the one service that reads them. */
const TABLE_MODE = 0o640;

/** Dovecot's tables, rows of its database rather than files. */
const DOVECOT_TABLES: readonly DovecotTable[] = ['logins', 'users'];

/** Where Dovecot's database is: in `dovecot_map_dir`. */
export function dovecotDatabasePath(ctx: LinuxContext): string {
  return join(ctx.linux.dovecotMapDir, 'mail.sqlite');
}

/**
 * The records and the tables made from them. The records are read whole once (and again when
 * their directory changed other than by this process); a change to one record then makes its
 * account's lines afresh, replaces that account's entries of Postfix's tables in memory, writes
 * the table files (postdrop's local-senders, OpenDKIM's two) whole from every account's lines kept
 * in memory (the account's bytes replaced in them), and Dovecot's rows of that account alone. A
 * file changed on disk since this process wrote it is written again.
 */
export function mailTables(ctx: LinuxContext) {
  const { linux } = ctx;
  /** Each table file's path on the system (the real one below the root: `tables`). */
  const tableNames: Record<FileTable, string> = {
    localSenders: join(linux.postfixMapDir, 'local-senders'),
    keys: join(linux.opendkimMapDir, 'keys'),
    signing: join(linux.opendkimMapDir, 'signing'),
  };
  const tables = Object.fromEntries(
    Object.entries(tableNames).map(([name, path]) => [name, ctx.path(path)]),
  ) as typeof tableNames;
  const names = Object.keys(tableNames) as FileTable[];
  const database = dovecotDatabase(ctx.path(dovecotDatabasePath(ctx)), systemGroupId(ctx.root, 'dovecot'));
  /** Dovecot's rows changed since they were written: by login, those gone and those written. */
  const pending = new Map(
    DOVECOT_TABLES.map((table) => [table, { gone: new Set<string>(), put: new Map<string, string>() }]),
  );
  /** Whether every account's lines were made afresh since Dovecot's rows were last written. */
  let remade = true;
  /** Whether an account's lines all went since then (its rows go, and the database's log is emptied). */
  let removed = false;
  const recordDir = ctx.path(linux.mailDir);

  /** The records, by file name, as this process last read or wrote them; null until read. */
  let records: Map<string, MailDomain> | null = null;
  /** The record directory's stamp after this process last read or changed it. */
  let recordsStamp = '';
  /** Its stamp when the lines were last made from the records (null: never). */
  let linesStamp: string | null = null;
  /** The file names of each account's records. */
  const filesOf = new Map<string, Set<string>>();
  /** Each account's lines, and the hash its logins were written with. */
  const lines = new Map<string, { of: AccountLines; hash: string }>();
  /**
   * The accounts with lines, in the order of the tables: sorted when every account's lines are made
   * afresh, a new account's last (createacct adds to the end of each table file, written in place).
   */
  let users: string[] = [];
  /** Where each of `users` is in it: a search of the list cost about 0.4 ms at 10,000 accounts. */
  const position = new Map<string, number>();
  /**
   * The parts the table files are made of, joined in the order of `users` as the files take them,
   * and where each account's begins: a change replaces the account's bytes alone. `bytes` is the
   * start of `room`, which has space after it: a new account's lines, last, are copied there, not
   * the whole table with them (twice the room when it runs out).
   */
  let joined = {} as Record<FilePart, { bytes: Buffer; starts: number[]; room: Buffer }>;
  /**
   * The other parts, each joined whole only when asked for (a milter's text, Dovecot's rows written
   * whole), and kept until a change of one of its lines: a change joins none of them.
   */
  const joinedText = new Map<keyof AccountLines, string>();
  /** Each table's stamp as this process last wrote or read it. */
  const written = new Map<FileTable, string>();
  /** The tables whose lines changed since they were written. */
  const stale = new Set<FileTable>();
  /**
   * Of each stale table whose only change since it was written is lines added at its end, those
   * lines (the file is appended to); a table with any other change is written whole.
   */
  const added = new Map<FilePart, Buffer[] | null>();
  /** Postfix's tables: each key's value, and the account whose lines give it. */
  const entries = new Map(
    POSTFIX_TABLES.map((table) => [table, new Map<string, { user: string; value: string }>()]),
  );

  /**
   * Takes the account's entries of `table` from `was` out of memory and puts those of `now` in; of
   * a key the account gives twice the first counts, as it did in Postfix's table files (no two
   * accounts give one key: each is a domain's, or an address at one, or the account's user).
   */
  function replaceEntries(table: PostfixTable, user: string, was: string, now: string): void {
    const map = entries.get(table)!;
    for (const [key] of keyed(was)) if (map.get(key)?.user === user) map.delete(key);
    const put = new Set<string>();
    for (const [key, value] of keyed(now)) {
      if (put.has(key)) continue;
      put.add(key);
      map.set(key, { user, value });
    }
  }

  /** The records as they are now (read whole when their directory changed behind this process). */
  function current(): Map<string, MailDomain> {
    if (records !== null && fileStamp(recordDir) === recordsStamp) return records;
    records = new Map();
    filesOf.clear();
    const files = existsSync(recordDir)
      ? readdirSync(recordDir)
          .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
          .sort()
      : [];
    for (const name of files) {
      const record = readParsed(join(recordDir, name), (text) => JSON.parse(text) as MailDomain);
      if (record) remember(name, record);
    }
    recordsStamp = fileStamp(recordDir);
    return records;
  }

  function remember(name: string, record: MailDomain | null): void {
    const known = records!.get(name);
    if (known) filesOf.get(known.user)?.delete(name);
    if (record === null) {
      records!.delete(name);
      return;
    }
    records!.set(name, record);
    const files = filesOf.get(record.user);
    if (files) files.add(name);
    else filesOf.set(record.user, new Set([name]));
  }

  /** Makes the account's lines afresh; `hash` is its password's, else the shadow file's. */
  function remake(user: string, hash: string | undefined): void {
    const files = [...(filesOf.get(user) ?? [])].sort();
    const before = lines.get(user);
    let after: { of: AccountLines; hash: string } | undefined;
    if (files.length === 0) {
      filesOf.delete(user);
      lines.delete(user);
    } else {
      const now = hash ?? shadowPassword(ctx.root, user) ?? '!';
      after = {
        of: accountLines(
          files.map((name) => records!.get(name)!),
          now,
        ),
        hash: now,
      };
      lines.set(user, after);
    }
    const found = position.get(user);
    const listed = found !== undefined;
    const at = found ?? users.length;
    for (const part of Object.keys(before?.of ?? after?.of ?? {}) as (keyof AccountLines)[])
      if (before?.of[part] !== after?.of[part]) joinedText.delete(part);
    for (const part of FILE_PARTS) {
      if (before?.of[part] === after?.of[part]) continue;
      const { bytes, starts } = joined[part];
      const start = at < starts.length ? starts[at]! : bytes.length;
      const end = listed ? (at + 1 < starts.length ? starts[at + 1]! : bytes.length) : start;
      const replacement = Buffer.from(after?.of[part] ?? '');
      const tail = added.get(part);
      if (!listed && tail !== null) added.set(part, [...(tail ?? []), replacement]);
      else added.set(part, null);
      const delta = replacement.length - (end - start);
      if (listed && !after) starts.splice(at, 1);
      if (!listed && after) starts.splice(at, 0, start);
      for (let i = after ? at + 1 : at; i < starts.length; i++) starts[i]! += delta;
      joined[part] =
        start === bytes.length && end === start
          ? appended(joined[part], replacement, starts)
          : {
              bytes: Buffer.concat([bytes.subarray(0, start), replacement, bytes.subarray(end)]),
              starts,
              room: Buffer.alloc(0),
            };
    }
    if (listed && !after) {
      users.splice(at, 1);
      position.delete(user);
      for (let i = at; i < users.length; i++) position.set(users[i]!, i);
    }
    if (!listed && after) position.set(user, users.push(user) - 1);
    for (const table of names)
      if (PARTS[table].some((part) => before?.of[part] !== after?.of[part])) stale.add(table);
    for (const table of POSTFIX_TABLES)
      if (before?.of[table] !== after?.of[table])
        replaceEntries(table, user, before?.of[table] ?? '', after?.of[table] ?? '');
    if (before && !after) removed = true;
    for (const table of DOVECOT_TABLES) {
      const { gone, put } = pending.get(table)!;
      for (const row of rowsOf(table, before?.of)) {
        put.delete(loginOf(row));
        gone.add(loginOf(row));
      }
      for (const row of rowsOf(table, after?.of)) {
        gone.delete(loginOf(row));
        put.set(loginOf(row), row);
      }
    }
  }

  /** Every account's lines made afresh, from every record and the shadow file. */
  function remakeAll(hashes: ReadonlyMap<string, string>): void {
    const all = current();
    const shadow = shadowPasswords(ctx.root);
    lines.clear();
    users = [...filesOf.keys()].sort();
    position.clear();
    for (const [i, user] of users.entries()) position.set(user, i);
    for (const user of users) {
      const files = [...filesOf.get(user)!].sort();
      const hash = hashes.get(user) ?? shadow.get(user) ?? '!';
      lines.set(user, {
        of: accountLines(
          files.map((name) => all.get(name)!),
          hash,
        ),
        hash,
      });
    }
    joinedText.clear();
    joined = Object.fromEntries(
      FILE_PARTS.map((part) => {
        const each = users.map((user) => Buffer.from(lines.get(user)!.of[part]));
        const starts: number[] = [];
        let at = 0;
        for (const bytes of each) {
          starts.push(at);
          at += bytes.length;
        }
        return [part, { bytes: Buffer.concat(each), starts, room: Buffer.alloc(0) }];
      }),
    ) as typeof joined;
    for (const table of names) stale.add(table);
    for (const part of FILE_PARTS) added.set(part, null);
    for (const map of entries.values()) map.clear();
    for (const table of POSTFIX_TABLES)
      for (const user of users) replaceEntries(table, user, '', lines.get(user)!.of[table]);
    remade = true;
    linesStamp = recordsStamp;
  }

  /**
   * Writes each table whose lines changed, or that changed on disk since this process wrote it
   * (`all`: every table is compared with the disk, and given to its readers' group). Answers the
   * readers of the tables whose content changed and who read them again only when reloaded:
   * Dovecot reads its rows on every lookup.
   */
  function flush(all: boolean): Set<TableReader> {
    const changed = new Set<TableReader>();
    if (all || remade || !database.current())
      for (const table of DOVECOT_TABLES) database.sync(table, rowsOf(table, null));
    else database.apply(pending, removed);
    remade = false;
    removed = false;
    for (const changes of pending.values()) {
      changes.gone.clear();
      changes.put.clear();
    }
    for (const table of names) {
      const file = tables[table];
      const untouched = !all && written.get(table) === fileStamp(file);
      if (untouched && !stale.has(table)) continue;
      const content = joined[table].bytes;
      const { group, reloaded } = READERS[table];
      // Lines added at the end alone, to the file as this process wrote it: appended in place.
      const tail = untouched ? added.get(table) : null;
      if (tail) {
        const bytes = Buffer.concat(tail);
        if (bytes.length === 0) continue;
        appendToFile(file, bytes, content.length - bytes.length);
        if (reloaded) changed.add(reloaded);
        written.set(table, fileStamp(file));
        continue;
      }
      const gid = systemGroupId(ctx.root, group);
      // Unchanged on disk since written: its lines changed, so its content did.
      const onDisk = untouched ? null : readParsed(file, (text) => text);
      if (untouched || onDisk === null || !content.equals(Buffer.from(onDisk))) {
        writeFileAtomic(file, content, TABLE_MODE, gid);
        if (reloaded) changed.add(reloaded);
      } else if (all && gid !== undefined) giveFile(file, 0, gid);
      written.set(table, fileStamp(file));
    }
    stale.clear();
    added.clear();
    return changed;
  }

  /** Every account's lines of `part`, in the order of `users`. */
  function wholePart(part: keyof AccountLines): string {
    if ((FILE_PARTS as readonly string[]).includes(part)) return joined[part as FilePart].bytes.toString();
    let text = joinedText.get(part);
    if (text === undefined) {
      text = users.map((user) => lines.get(user)!.of[part]).join('');
      joinedText.set(part, text);
    }
    return text;
  }

  /** The rows of `table` in `of` (one account's lines), or of every account (null). */
  function rowsOf(table: DovecotTable, of: AccountLines | null | undefined): string[] {
    if (of === undefined) return [];
    const text = PARTS[table].map((part) => (of === null ? wholePart(part) : of[part])).join('');
    return text.split('\n').filter((row) => row !== '');
  }

  return {
    tableNames,
    tables,
    database,
    /** Every record, in the order of their file names. */
    records(): MailDomain[] {
      return [...current()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, record]) => record);
    },
    /**
     * Every table, written whole from every record read afresh; `hashes` stands for the shadow
     * file's hash of the users it names. Answers the readers (the tables' groups) of the tables
     * whose content changed.
     */
    writeTables(hashes: ReadonlyMap<string, string> = new Map()): Set<TableReader> {
      records = null;
      remakeAll(hashes);
      return flush(true);
    },
    /**
     * Writes the record of one mail domain (`content` null: removes it) and the tables it changes;
     * `hashes` as for writeTables. Answers the readers of the tables whose content changed.
     */
    putRecord(
      domain: string,
      content: string | null,
      mode: number,
      hashes: ReadonlyMap<string, string> = new Map(),
    ): Set<TableReader> {
      const name = domainFile(domain, '.json');
      const known = records !== null && fileStamp(recordDir) === linesStamp;
      restoreFile(join(recordDir, name), content, mode);
      if (!known) {
        records = null;
        remakeAll(hashes);
        return flush(false);
      }
      recordsStamp = fileStamp(recordDir);
      linesStamp = recordsStamp;
      const before = records!.get(name);
      const after = content === null ? null : (JSON.parse(content) as MailDomain);
      remember(name, after);
      for (const user of new Set([before?.user, after?.user]))
        if (user !== undefined) remake(user, hashes.get(user));
      return flush(false);
    },
    /**
     * What Postfix's `table` says of `key` (its case aside), or null when it has no such key; the
     * records read again first if another process changed them.
     */
    lookup(table: PostfixTable, key: string): string | null {
      if (fileStamp(recordDir) !== linesStamp) remakeAll(new Map());
      return entries.get(table)!.get(asciiLower(key))?.value ?? null;
    },
    /** Postfix's `table` whole, `key value` a line (what a milter reads, and the doctor). */
    text(table: PostfixTable | 'localSenders'): string {
      if (fileStamp(recordDir) !== linesStamp) remakeAll(new Map());
      return wholePart(table);
    },
    /** The hash the logins table lists the account's own logins with, or null when it lists none. */
    loginHash(user: string): string | null {
      if (fileStamp(recordDir) !== linesStamp) remakeAll(new Map());
      const known = lines.get(user);
      return known && known.of.ownLogins !== '' ? known.hash : null;
    },
  };
}

/**
 * `lines` added after `joined`'s bytes, in the room after them when there is enough (the room is
 * empty unless the bytes are its start: a table joined afresh has none).
 */
function appended(
  joined: { bytes: Buffer; room: Buffer },
  lines: Buffer,
  starts: number[],
): { bytes: Buffer; starts: number[]; room: Buffer } {
  const length = joined.bytes.length + lines.length;
  let room = joined.room;
  if (room.length < length) {
    room = Buffer.allocUnsafe(Math.max(length * 2, 4096));
    joined.bytes.copy(room);
  }
  lines.copy(room, joined.bytes.length);
  return { bytes: room.subarray(0, length), starts, room };
}

/** The entries of table lines: each line's key (lower case) and the value after its first space. */
function* keyed(text: string): Generator<[string, string]> {
  for (const line of text.split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0) yield [asciiLower(line.slice(0, space)), line.slice(space + 1)];
  }
}

/** `text` with A to Z in lower case, and nothing else changed: Postfix folds a key's case so. */
export function asciiLower(text: string): string {
  return text.replace(/[A-Z]+/g, (upper) => upper.toLowerCase());
}
