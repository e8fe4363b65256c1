// Reading the system's user database (below the system root) without running a command.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { addedTo, readParsed } from './known-files.ts';

export interface SystemUser {
  name: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

/** The file's text, read again only when it changed (readParsed). */
function text(root: string, file: string): string {
  return readParsed(join(root, 'etc', file), (content) => content) ?? '';
}

/** Each file's lines, split at `:`, and the text they were split from. */
const split = new Map<string, { from: string; lines: string[][] }>();

/** The file's lines, split at `:`, split again only when the file changed. */
function lines(root: string, file: string): string[][] {
  const path = join(root, 'etc', file);
  const now = text(root, file);
  const known = split.get(path);
  if (known?.from === now) return known.lines;
  const parsed = now
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => line.split(':'));
  split.set(path, { from: now, lines: parsed });
  return parsed;
}

/**
 * The lines found by name in each file while its text is `from` (`missing`: the names it has no
 * line of). When the text grew by lines added at its end (`added`), the lines found stay, and a
 * name missing before (`absentBefore`) is looked for in the added lines alone.
 *
 * `from` is searched as `base` and then `tail`, the lines added since `base` was taken: Berth adds
 * a new user's lines at the end of passwd and shadow, and the text it then holds is the old one and
 * the new lines joined (user/database.ts). A search of that whole would copy it flat, a new
 * megabyte at 10,000 accounts for every call; the tail is copied alone, until it grows past
 * TAIL_LIMIT and becomes part of the base.
 */
interface Found {
  from: string;
  base: string;
  tail: string;
  lines: Map<string, string>;
  missing: Set<string>;
  added: string | null;
  absentBefore: Set<string>;
}
const found = new Map<string, Found>();
const TAIL_LIMIT = 256 * 1024;

/** The line of `key` (a name and its `:`) in `text`, made of whole lines; undefined if none. */
function lineIn(text: string, key: string): string | undefined {
  let at = 0;
  if (!text.startsWith(key)) {
    at = text.indexOf(`\n${key}`) + 1;
    if (at === 0) return undefined;
  }
  const end = text.indexOf('\n', at);
  // Copied out of the file's text: a slice of it (and the fields split from the slice) would keep
  // the whole text alive for as long as a field is kept (the mail tables keep each account's
  // hash), a copy of the shadow file for every account.
  return Buffer.from(text.slice(at, end === -1 ? undefined : end)).toString();
}

/** What is known of the file whose text is now `content`, kept from what was known of `known.from`. */
function foundIn(path: string, content: string, known: Found | undefined): Found {
  const added = known ? addedTo(path, known.from, content) : null;
  if (!known || added === null || !known.base.endsWith('\n'))
    return {
      from: content,
      base: content,
      tail: '',
      lines: new Map(),
      missing: new Set(),
      added: null,
      absentBefore: new Set(),
    };
  const tail = known.tail + added;
  const grown = tail.length > TAIL_LIMIT;
  return {
    from: content,
    base: grown ? content : known.base,
    tail: grown ? '' : tail,
    lines: known.lines,
    missing: new Set(),
    added,
    absentBefore: known.missing,
  };
}

/**
 * The line of one name, split at `:`, found in the text without splitting the rest: every step of
 * a call asks for its user, and the databases grow with the accounts (splitting 10,000 lines costs
 * about 9 ms; this search, a fraction of one, and once a name while the file stays the same).
 */
function entry(root: string, file: string, name: string): string[] | undefined {
  if (name === '' || /[:\n#]/.test(name)) return undefined;
  const path = join(root, 'etc', file);
  const content = text(root, file);
  let known = found.get(path);
  if (known?.from !== content) {
    known = foundIn(path, content, known);
    found.set(path, known);
  }
  let line = known.lines.get(name);
  if (line === undefined && !known.missing.has(name)) {
    const key = `${name}:`;
    // The lines added last first: a new user is asked for by every step of its call. They are
    // Berth's, and it never adds a name the file has: a name is in one of the two, not both.
    line =
      known.added !== null && known.absentBefore.has(name)
        ? lineIn(known.added, key)
        : (lineIn(known.tail, key) ?? lineIn(known.base, key));
    if (line === undefined) known.missing.add(name);
    else known.lines.set(name, line);
  }
  return line?.split(':');
}

const toUser = ([name, , uid, gid, gecos, home, shell]: string[]): SystemUser => ({
  name: name ?? '',
  uid: Number(uid),
  gid: Number(gid),
  gecos: gecos ?? '',
  home: home ?? '',
  shell: shell ?? '',
});

export function systemUsers(root: string): SystemUser[] {
  return lines(root, 'passwd').map(toUser);
}

export function findSystemUser(root: string, name: string): SystemUser | undefined {
  const line = entry(root, 'passwd', name);
  return line && toUser(line);
}

/** The password field of /etc/shadow: a hash, `!`-prefixed when locked. */
export function shadowPassword(root: string, name: string): string | undefined {
  return entry(root, 'shadow', name)?.[1];
}

/** Every user's password field in /etc/shadow, read once (for tables naming every account). */
export function shadowPasswords(root: string): Map<string, string> {
  return new Map(lines(root, 'shadow').map(([user, hash]) => [user ?? '', hash ?? '']));
}

/** Whether the system has a user or a group of this name (useradd -U makes both). */
export function systemNameTaken(root: string, name: string): boolean {
  return findSystemUser(root, name) !== undefined || entry(root, 'group', name) !== undefined;
}

/** Whether the group database has a group of this name. */
export function systemGroupExists(root: string, name: string): boolean {
  return systemGroupId(root, name) !== undefined;
}

/** The gid of the group of this name, when the group database has it. */
export function systemGroupId(root: string, name: string): number | undefined {
  const gid = entry(root, 'group', name)?.[2];
  return gid === undefined ? undefined : Number(gid);
}

/** Every uid and gid the user and group databases hold, and each user's uid by name. */
export function systemIds(root: string): { users: Map<string, number>; ids: number[] } {
  const users = systemUsers(root);
  const gids = lines(root, 'group').map(([, , gid]) => Number(gid));
  return {
    users: new Map(users.map((user) => [user.name, user.uid])),
    ids: [...users.map((user) => user.uid), ...gids].filter(Number.isInteger),
  };
}

/** Whether any process runs as this uid (read from /proc, not a command). */
export function processOf(uid: number): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(real) === uid) return true;
    } catch {
      // ended meanwhile
    }
  }
  return false;
}

/** The users /etc/group lists as members of a group (their supplementary groups). */
export function systemGroupMembers(root: string, group: string): string[] {
  const members = entry(root, 'group', group)?.[3] ?? '';
  return members.split(',').filter(Boolean);
}
