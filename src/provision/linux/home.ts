// The one way the linux driver touches a customer's files. A customer can write its home, and so
// can replace anything in it by a symbolic link (public_html → /etc/sudoers.d); root must never
// follow such a link. Every path below a home is therefore reached one component at a time from
// an open directory, each opened with O_NOFOLLOW and checked on the descriptor: a link anywhere on
// the way is refused, never followed, and changes (chown, chmod) go to the descriptor, not a name.
// Node has no openat(); `/proc/self/fd/<fd>/<name>` is the kernel's equivalent: `<name>` is looked
// up in exactly the directory the descriptor holds, whatever was renamed or replaced since.
// Nothing else in src/provision/linux opens a path below a home (a test keeps it so), but for
// home-walk.js, countHomes's walk, and home-remove.js, the removals' walk, each in a thread of its
// own, which keep the same rules.
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import { Worker } from 'node:worker_threads';

// libuv opens every file close-on-exec.
const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const OPEN_DIRECTORY = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;

export interface Owner {
  uid: number;
  gid: number;
}

/** What a path below a home is, seen without following a link. */
export type Kind = 'directory' | 'file' | 'link' | 'other' | 'missing';

export class UnsafePath extends Error {
  override name = 'UnsafePath';
}

/** A path below the directory open as `fd`, resolved by the kernel in that very directory. */
function beneath(fd: number, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
    throw new UnsafePath(`not a single path component: ${JSON.stringify(name)}`);
  return `/proc/self/fd/${fd}/${name}`;
}

function openDirectory(path: string): number {
  try {
    return openSync(path, OPEN_DIRECTORY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'ENOTDIR')
      throw new UnsafePath(`${path} is a symbolic link or not a directory: not followed`);
    throw error;
  }
}

function withDirectory<T>(path: string, use: (fd: number) => T): T {
  const fd = openDirectory(path);
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens `home` itself (whose parent, the home base, only root can write) and then each of
 * `components` below it, none of them followed if it is a link; returns the last one's descriptor,
 * which the caller closes.
 */
export function openPath(home: string, components: readonly string[]): number {
  let fd = openDirectory(home);
  try {
    for (const name of components) {
      const next = openDirectory(beneath(fd, name));
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Runs `use` on `<home>/<components…>` opened as openPath opens it. */
function withPath<T>(home: string, components: readonly string[], use: (fd: number) => T): T {
  const fd = openPath(home, components);
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}

/** The device and inode of `<home>/<components…>`, opened as openPath opens it (no link followed). */
export function identityOf(home: string, components: readonly string[]): { dev: number; ino: number } {
  return withPath(home, components, (fd) => {
    const { dev, ino } = fstatSync(fd);
    return { dev, ino };
  });
}

/** Sets owner and mode on an open descriptor: explicit, whatever the umask made. */
function settle(fd: number, owner: Owner, mode: number): void {
  fchownSync(fd, owner.uid, owner.gid);
  fchmodSync(fd, mode);
}

/** Creates the home directory itself; it must not exist yet. */
export function createHome(home: string, owner: Owner, mode: number): void {
  mkdirSync(home, { mode: 0o700 });
  withDirectory(home, (fd) => settle(fd, owner, mode));
}

/**
 * Makes `<home>/<components…>` a directory with this owner and mode, creating what is missing.
 * Returns the kind found instead when a component is a link, a file or anything else, leaving it
 * untouched: a customer's link is never followed, nor removed.
 */
export function ensureDirectory(
  home: string,
  components: readonly string[],
  owner: Owner,
  mode: number,
): 'directory' | Kind {
  return withDirectory(home, (homeFd) => {
    const opened: number[] = [];
    try {
      let fd = homeFd;
      for (const name of components) {
        const path = beneath(fd, name);
        const kind = kindAt(path);
        if (kind === 'missing') mkdirSync(path, { mode: 0o700 });
        else if (kind !== 'directory') return kind;
        fd = openDirectory(path);
        opened.push(fd);
      }
      settle(fd, owner, mode);
      return 'directory';
    } finally {
      for (const open of opened) closeSync(open);
    }
  });
}

/**
 * Makes `<home>/<dir>` root's with the account's group, 0750, and `<home>/<dir>/<file>` in it
 * root's with the account's group, 0660: the account's programs append to the file and read it,
 * but cannot replace it with a link, a directory or a file they cannot open, since nothing in
 * the directory is theirs to change. What is there in the file's place that is not a file (left
 * from before) is removed, never followed.
 */
export function ensureGroupFile(home: string, dir: string, file: string, gid: number): void {
  if (ensureDirectory(home, [dir], { uid: 0, gid }, 0o750) !== 'directory')
    throw new UnsafePath(`${home}/${dir} is not a directory`);
  withPath(home, [dir], (fd) => {
    const path = beneath(fd, file);
    const kind = kindAt(path);
    if (kind === 'directory') throw new UnsafePath(`${home}/${dir}/${file} is a directory`);
    if (kind === 'link' || kind === 'other') unlinkSync(path);
    const out = openSync(
      path,
      constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      settle(out, { uid: 0, gid }, 0o660);
    } finally {
      closeSync(out);
    }
  });
}

/**
 * Makes `<home>/<components…>` a directory, each missing one on the way made with this owner and
 * mode; what exists is left as it is. Nothing is followed: a link (or a file) on the way is
 * UnsafePath, and stays untouched. Answers the directories made, each as its components, the
 * deepest last, for removeMadeDirectories to undo.
 */
export function makeDirectories(
  home: string,
  components: readonly string[],
  owner: Owner,
  mode: number,
): string[][] {
  const made: string[][] = [];
  withDirectory(home, (homeFd) => {
    const opened: number[] = [];
    try {
      let fd = homeFd;
      for (const [i, name] of components.entries()) {
        const path = beneath(fd, name);
        const kind = kindAt(path);
        const shown = components.slice(0, i + 1).join('/');
        if (kind !== 'missing' && kind !== 'directory')
          throw new UnsafePath(`${shown} is ${kind === 'link' ? 'a symbolic link' : 'not a directory'}`);
        // mkdir fails on whatever appeared meanwhile; the open follows no link put there since.
        if (kind === 'missing') mkdirSync(path, { mode: 0o700 });
        fd = openDirectory(path);
        opened.push(fd);
        if (kind === 'missing') {
          settle(fd, owner, mode);
          made.push(components.slice(0, i + 1));
        }
      }
    } finally {
      for (const open of opened) closeSync(open);
    }
  });
  return made;
}

/** Removes what makeDirectories made, deepest first, where it is still an empty directory. */
export function removeMadeDirectories(home: string, made: readonly (readonly string[])[]): void {
  for (const components of [...made].reverse()) {
    try {
      withPath(home, components.slice(0, -1), (fd) => rmdirSync(beneath(fd, components.at(-1)!)));
    } catch {
      // Not empty, gone, or no longer a directory: the account's now, left as it is.
    }
  }
}

/** Sets the owner and mode of `<home>/<components…>`, a directory reached without links. */
export function settleDirectory(
  home: string,
  components: readonly string[],
  owner: Owner,
  mode: number,
): void {
  withPath(home, components, (fd) => settle(fd, owner, mode));
}

function kindAt(path: string): Kind {
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
  if (stat.isSymbolicLink()) return 'link';
  if (stat.isDirectory()) return 'directory';
  if (stat.isFile()) return 'file';
  return 'other';
}

/** What `<home>/<components…>` is, without following a link on the way or at the end. */
export function kindOf(home: string, components: readonly string[]): Kind {
  if (components.length === 0) return kindAt(home);
  try {
    return withPath(home, components.slice(0, -1), (fd) => kindAt(beneath(fd, components.at(-1)!)));
  } catch (error) {
    if (error instanceof UnsafePath) return 'link';
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'missing';
    throw error;
  }
}

/**
 * Whether only root can change what is directly in this home: a root-owned directory (not a link)
 * no group or other may write. Only then may root make plain paths in it (a shell jail).
 */
export function rootAloneWrites(home: string): boolean {
  try {
    const stat = lstatSync(home);
    return stat.isDirectory() && stat.uid === 0 && (stat.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Why a removal stopped: a link or a moved directory on its way, or another filesystem in it. */
export class OtherFilesystem extends Error {
  override name = 'OtherFilesystem';
}

type Removal = { op: 'tree'; top: string; components: string[] } | { op: 'owned'; dir: string; uid: number };

/**
 * Runs a removal in a worker thread (home-remove.js), under this file's rules: however many files
 * or however deep the tree, the server's own thread goes on answering meanwhile.
 */
function removeInThread(request: Removal): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./home-remove.js', import.meta.url), {
      workerData: request,
      // The walk holds a batch of names of one directory and a few numbers a level: little memory.
      resourceLimits: { maxOldGenerationSizeMb: 64 },
    });
    let answered = false;
    worker.on('message', (answer: { removed: string[] } | { error: { message: string; code: string } }) => {
      answered = true;
      if ('removed' in answer) return resolve(answer.removed);
      const { message, code } = answer.error;
      if (code === 'UNSAFE') return reject(new UnsafePath(message));
      if (code === 'EXDEV') return reject(new OtherFilesystem(message));
      reject(Object.assign(new Error(message), { code }));
    });
    worker.on('error', (error) => {
      answered = true;
      reject(error);
    });
    worker.on('exit', (code) => {
      if (!answered) reject(new Error(`the removal's thread ended (${code}) without an answer`));
    });
  });
}

/**
 * Removes a home and everything in it (its parent only root writes); links in it are removed,
 * never followed; a directory on another filesystem in it (a btrfs subvolume) is OtherFilesystem,
 * not entered. No home: nothing to do.
 */
export async function removeHome(home: string): Promise<void> {
  await removeInThread({ op: 'tree', top: dirname(home), components: [basename(home)] });
}

/**
 * Removes `<home>/<components…>` and everything in it, reached without links (a link on the way:
 * UnsafePath, nothing removed); links in it are removed, never followed. Nothing there: nothing
 * to do.
 */
export async function removeTree(home: string, components: readonly string[]): Promise<void> {
  await removeInThread({ op: 'tree', top: home, components: [...components] });
}

/**
 * Removes whatever `uid` owns below a directory every user may write (`/tmp`, `/var/tmp`,
 * `/dev/shm`): a file, link or directory of its own goes whole (a directory with whatever is in
 * it), and directories of others that others may write (where the uid could have put something)
 * are looked into for more, 256 deep at most; the rest of the tree, however large, is not walked.
 * Links are removed, never followed, and nothing on another filesystem (a mount below it) is
 * entered. Returns what was removed. (A file the uid left in a directory made unwritable since
 * stays: no later account gets the uid, CONTRACT §10.)
 */
export function removeOwnedBy(dir: string, uid: number): Promise<string[]> {
  return removeInThread({ op: 'owned', dir, uid });
}

/** What a home's walk counted; `cut` says why it stopped short, the bytes then being a floor. */
export interface HomeCount {
  bytes: number;
  cut: string | null;
}

/** How long past its time limit a walk may stay silent before its thread is stopped. */
const SILENCE_MS = 10_000;

/**
 * The bytes the account's files take below each home (what root owns there is not the account's),
 * counted without following any link, one home after the other in a worker thread (home-walk.js):
 * however many files a home holds, the server's own thread never waits on its walk. Each home's walk
 * stops after `limitMs`, with what it counted so far. A home whose walk never answered (a thread
 * stuck in the kernel, stopped) is left out.
 */
export function countHomes(homes: readonly string[], limitMs: number): Promise<Map<string, HomeCount>> {
  const counted = new Map<string, HomeCount>();
  if (homes.length === 0) return Promise.resolve(counted);
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./home-walk.js', import.meta.url), {
      workerData: { homes, limitMs },
      // The walk holds a few entries of one directory at a time: little memory, whatever the home.
      resourceLimits: { maxOldGenerationSizeMb: 64 },
    });
    let silence: NodeJS.Timeout;
    const listen = () => {
      clearTimeout(silence);
      silence = setTimeout(() => void worker.terminate(), limitMs + SILENCE_MS);
    };
    listen();
    worker.on('message', (result: HomeCount & { home: string }) => {
      counted.set(result.home, { bytes: result.bytes, cut: result.cut });
      listen();
    });
    worker.on('error', (error) => {
      clearTimeout(silence);
      reject(error);
    });
    worker.on('exit', () => {
      clearTimeout(silence);
      resolve(counted);
    });
  });
}

/**
 * The directories of a home that are the account's own (owned by `uid`), as paths relative to the
 * home: those directly in it and those in a directory of root's there (the shell's home in a jail),
 * except below `skip` (a jail's system directories). What root made is not the account's.
 */
export function accountDirectories(home: string, uid: number, skip: ReadonlySet<string>): string[] {
  const found: string[] = [];
  const look = (fd: number, prefix: string, depth: number) => {
    for (const name of readdirSync(`/proc/self/fd/${fd}`).sort()) {
      const path = beneath(fd, name);
      const stat = lstatSync(path);
      if (!stat.isDirectory()) continue;
      if (stat.uid === uid) found.push(`${prefix}${name}`);
      else if (stat.uid === 0 && depth === 0 && !skip.has(name))
        withDirectory(path, (inner) => look(inner, `${name}/`, 1));
    }
  };
  withDirectory(home, (fd) => look(fd, '', 0));
  return found;
}
