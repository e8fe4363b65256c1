// The /etc an account's PHP sees (CONTRACT §10: no account lists another). The system's /etc/passwd
// and /etc/group name every account, its home and its groups, and are readable by all: PHP's
// posix_getpwnam('bob'), file_get_contents('/etc/passwd') and `getent passwd` would list every
// tenant. So in the mount namespace of the account's PHP (php/component.ts), /etc is a view of the
// system's, kept by root in `<view_dir>/<user>` (in a directory only root may enter):
//
// - `passwd` and `group` hold the system's own entries (uid or gid below 1000, and nobody/nogroup,
//   as Debian numbers them) and the account's own line; a system group keeps as members only the
//   system's users and the account (Berth's groups, berth-shell and the like, list accounts);
// - `shadow`, `gshadow`, `subuid`, `subgid` and the backups `passwd-` … are not there at all;
// - `cron.d` is an empty directory (its files are named after the accounts);
// - every other directory is the system's own, bound into the view inside the namespace: what
//   changes in it (PHP's settings, certificates) is seen at once;
// - every other file is a copy of the system's (its mode, owner and times), and every symbolic
//   link the same link. Not a hard link: Debian's cron ignores /etc/crontab when it has more than
//   one ("NUMBER OF HARD LINKS > 1"), and other tools may judge a file by its links too.
//
// A file bound over /etc/passwd alone would not do: the kernel drops a mount in other namespaces
// when the file under it is replaced, and useradd replaces /etc/passwd (a new file renamed over
// it) at every createacct. A directory is never replaced so. A file the system changes or
// replaces (a new /etc/hosts, passwd itself) is copied or written again when Berth next looks
// (refresh, every few seconds while Berth serves, when the signature of /etc has changed): the
// view is behind the system by that much, and never shows more than its own entries.
import {
  chmodSync,
  chownSync,
  copyFileSync,
  type Dirent,
  lstatSync,
  mkdirSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmdirSync,
  type Stats,
  symlinkSync,
  unlinkSync,
  utimesSync,
} from 'node:fs';
import { join } from 'node:path';
import { readIfExists, writeFileAtomic } from '../files.ts';
import { mountCommand } from './mounts.ts';

/**
 * Entries of /etc no account's view has: they name every account, or hold password hashes. With
 * them the files the tools that change them write beside them for a moment (`passwd+` and
 * `passwd.lock` of shadow's tools, vipw's `ptmp`, `.pwd.lock`), whole copies of the files.
 */
const OMITTED = /^(?:n?(?:passwd|group|g?shadow)|subuid|subgid|[pg]tmp|\.pwd\.lock)(?:[^a-z0-9_]|$)/;
/** Directories of /etc that are empty in the view: what they hold is named after the accounts. */
const EMPTIED = new Set(['cron.d']);
/** The first uid (and gid) of a user who is not the system's (Debian's FIRST_UID). */
const FIRST_UID = 1000;
const NOBODY = 65534;

const systemId = (id: string) => {
  const n = Number(id);
  return Number.isInteger(n) && (n < FIRST_UID || n === NOBODY);
};

/** `/etc/passwd` as `user` may see it: the system's own users and the account's line. */
export function viewPasswd(passwd: string, user: string): string {
  const lines = passwd.split('\n').filter((line) => {
    const [name, , uid] = line.split(':');
    return name !== undefined && uid !== undefined && (name === user || systemId(uid));
  });
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * `/etc/group` as `user` may see it: the system's own groups and the account's, each with only the
 * system's users and the account among its members.
 */
export function viewGroup(group: string, user: string, viewedPasswd: string): string {
  const known = new Set(viewedPasswd.split('\n').map((line) => line.split(':')[0]));
  const lines = group.split('\n').flatMap((line) => {
    const [name, password, gid, members = ''] = line.split(':');
    if (name === undefined || gid === undefined || !(name === user || systemId(gid))) return [];
    const kept = members.split(',').filter((member) => member !== '' && known.has(member));
    return [`${name}:${password ?? 'x'}:${gid}:${kept.join(',')}`];
  });
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/** Where each name stands in a list of members. */
function positions(names: readonly string[]): Map<string, number[]> {
  const at = new Map<string, number[]>();
  for (const [i, name] of names.entries()) at.set(name, [...(at.get(name) ?? []), i]);
  return at;
}

/**
 * `passwd` and `group` as each account may see them (as viewPasswd and viewGroup make them), the
 * system's files read once for all: what every running view needs when an account came or went,
 * at a cost for each view that does not grow with the number of accounts.
 */
export function accountViews(
  passwd: string,
  group: string,
): (user: string) => { passwd: string; group: string } {
  const users = passwd.split('\n').flatMap((line, at) => {
    const [name, , uid] = line.split(':');
    return name !== undefined && uid !== undefined ? [{ line, at, name, system: systemId(uid) }] : [];
  });
  const system = users.filter((u) => u.system);
  const systemNames = new Set(system.map((u) => u.name));
  const ownUsers = new Map<string, typeof users>();
  for (const u of users) if (!u.system) ownUsers.set(u.name, [...(ownUsers.get(u.name) ?? []), u]);
  const groups = group.split('\n').flatMap((line, at) => {
    const [name, password, gid, members = ''] = line.split(':');
    if (name === undefined || gid === undefined) return [];
    const all = members.split(',').filter((member) => member !== '');
    return [
      {
        at,
        name,
        password: password ?? 'x',
        gid,
        system: systemId(gid),
        all,
        index: positions(all),
      },
    ];
  });
  const systemGroups = groups
    .filter((g) => g.system)
    .map((g) => ({ ...g, kept: g.all.flatMap((m, i) => (systemNames.has(m) ? [{ m, i }] : [])) }));
  const ownGroups = new Map<string, typeof groups>();
  for (const g of groups) if (!g.system) ownGroups.set(g.name, [...(ownGroups.get(g.name) ?? []), g]);
  const inOrder = <T extends { at: number }>(list: T[], extra: T[]) =>
    extra.length === 0 ? list : [...list, ...extra].sort((a, b) => a.at - b.at);
  const text = (lines: string[]) => (lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  return (user) => {
    const own = ownUsers.get(user) ?? [];
    const seen = inOrder(system, own);
    const isUser = own.length > 0 || systemNames.has(user);
    const known = (m: string) => systemNames.has(m) || (isUser && m === user);
    const lines = inOrder(systemGroups as typeof groups, ownGroups.get(user) ?? []).map((g) => {
      const kept =
        'kept' in g
          ? [...(g.kept as { m: string; i: number }[])]
          : g.all.flatMap((m, i) => (known(m) ? [{ m, i }] : []));
      if ('kept' in g && own.length > 0 && !systemNames.has(user))
        for (const i of g.index.get(user) ?? []) kept.push({ m: user, i });
      const members = kept.sort((a, b) => a.i - b.i).map((k) => k.m);
      return `${g.name}:${g.password}:${g.gid}:${members.join(',')}`;
    });
    return { passwd: text(seen.map((u) => u.line)), group: text(lines) };
  };
}

/** Brings a view's `passwd` and `group` up to date (`view`: what accountViews gives its account). */
export function refreshAccountFiles(dir: string, view: { passwd: string; group: string }): void {
  for (const [name, content] of [
    ['passwd', view.passwd],
    ['group', view.group],
  ] as const) {
    const path = join(dir, name);
    if (readIfExists(path) !== content) writeFileAtomic(path, content, 0o644);
  }
}

/** What a view's entry is to be: the system's `/etc` entry as the view has it. */
type Wanted =
  | { kind: 'file'; source: string }
  | { kind: 'text'; text: string }
  | { kind: 'link'; target: string }
  | { kind: 'directory'; bound: boolean; mode: number; uid: number; gid: number };

function wanted(etc: string, entry: Dirent): Wanted | null {
  if (OMITTED.test(entry.name)) return null;
  const source = join(etc, entry.name);
  if (entry.isSymbolicLink()) return { kind: 'link', target: readlinkSync(source) };
  if (entry.isFile()) return { kind: 'file', source };
  if (!entry.isDirectory()) return null;
  const stat = lstatSync(source);
  return {
    kind: 'directory',
    bound: !EMPTIED.has(entry.name),
    mode: stat.mode & 0o7777,
    uid: stat.uid,
    gid: stat.gid,
  };
}

/**
 * Brings the view `view` (a directory of root's) of `etc` up to date for `user`; gives the names
 * of the system's directories the view binds (`bound`), and of those it has just made (`made`),
 * which a running namespace has yet to bind (bindCommand). Files are put whole (a temporary file
 * renamed), so a reader in the namespace sees the old or the new, never half.
 */
export function refreshView(etc: string, view: string, user: string): { bound: string[]; made: string[] } {
  const entries = readdirSync(etc, { withFileTypes: true });
  const expected = new Map<string, Wanted>();
  for (const entry of entries) {
    const want = vanishing(() => wanted(etc, entry));
    if (want) expected.set(entry.name, want);
  }
  const passwd = viewPasswd(readIfExists(join(etc, 'passwd')) ?? '', user);
  expected.set('passwd', { kind: 'text', text: passwd });
  expected.set('group', {
    kind: 'text',
    text: viewGroup(readIfExists(join(etc, 'group')) ?? '', user, passwd),
  });

  const made: string[] = [];
  const bound = [...expected]
    .filter(([, want]) => want.kind === 'directory' && want.bound)
    .map(([name]) => name);
  const present = new Set(readdirSync(view));
  const put = (name: string, want: Wanted) => {
    const path = join(view, name);
    const current = present.has(name) ? lstatSync(path) : null;
    if (want.kind === 'directory') {
      if (current?.isDirectory()) return;
      if (current) unlinkSync(path);
      mkdirSync(path);
      chmodSync(path, want.mode);
      if (want.bound) made.push(name);
      return;
    }
    if (current?.isDirectory()) return; // a directory the system replaced: left as it is.
    if (want.kind === 'text') {
      if (readIfExists(path) !== want.text) writeFileAtomic(path, want.text, 0o644);
    } else if (want.kind === 'link') {
      if (current?.isSymbolicLink() && readlinkSync(path) === want.target) return;
      replace(path, (temporary) => symlinkSync(want.target, temporary));
    } else {
      const source = lstatSync(want.source);
      if (current && sameFile(current, source)) return;
      replace(path, (temporary) => copy(want.source, temporary, source));
    }
  };
  for (const [name, want] of expected) vanishing(() => put(name, want));
  for (const name of present) {
    if (expected.has(name)) continue;
    const path = join(view, name);
    try {
      if (lstatSync(path).isDirectory()) rmdirSync(path);
      else unlinkSync(path);
    } catch {}
  }
  return { bound, made };
}

/**
 * What `read` gives, or null when what it reads was removed meanwhile: the system changes /etc
 * while the view is made (useradd's files come and go), and the next refresh sees the change.
 */
function vanishing<T>(read: () => T): T | null {
  try {
    return read();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Puts what `make` makes at a temporary name in place of `path`, at once. */
function replace(path: string, make: (temporary: string) => void): void {
  const temporary = `${path}.berth-new`;
  try {
    unlinkSync(temporary);
  } catch {}
  make(temporary);
  renameSync(temporary, path);
}

/** Whether a copy is still the file it was copied from: its size, mode, owner and time. */
const sameFile = (copy: Stats, source: Stats) =>
  copy.isFile() &&
  copy.size === source.size &&
  copy.mtimeMs === source.mtimeMs &&
  copy.mode === source.mode &&
  copy.uid === source.uid &&
  copy.gid === source.gid;

/** A copy of `source` at `target` with its mode, owner and times (`stat`: the source's). */
function copy(source: string, target: string, stat: Stats): void {
  copyFileSync(source, target);
  chownSync(target, stat.uid, stat.gid);
  chmodSync(target, stat.mode & 0o7777);
  utimesSync(target, stat.atime, stat.mtime);
}

/**
 * What the entries of `etc` are now (their names, kinds, sizes and times): when it is what it was,
 * no view needs a refresh. One lstat an entry. With `accounts` false, every entry but the files
 * that name the accounts (passwd, group and the like), which change with every account made.
 */
export function etcSignature(etc: string, accounts = true): string {
  return readdirSync(etc)
    .filter((name) => accounts || !OMITTED.test(name))
    .map((name) => {
      const stat = vanishing(() => lstatSync(join(etc, name), { bigint: true }));
      return stat
        ? `${name}\0${stat.mode}\0${stat.size}\0${stat.mtimeNs}\0${stat.ino}\0${stat.uid}\0${stat.gid}`
        : '';
    })
    .join('\n');
}

/**
 * The command, run inside the namespace, that binds each of the system's directories `names` (in
 * `etc`, the system's /etc as the namespace reaches it) at the same name in `view`.
 */
export function bindCommand(etc: string, view: string, names: readonly string[]): string[] {
  return mountCommand(names.map((name) => ({ bind: join(etc, name), at: join(view, name), optional: true })));
}
