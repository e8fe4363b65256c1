// The system's files the linux driver writes (server blocks, zones, keys, under directories only
// root can write): always to a temporary file in the same directory, synced, then renamed over the
// old one, so that a reader (nginx, BIND) never sees half a file. Nothing here is for a path below
// a customer's home: those go through home.ts. A link where a file should be is never followed.
import { createHash, randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  constants,
  createWriteStream,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  symlinkSync,
  type WriteStream,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The name of a domain's file (`example.com.conf`): the domain and the suffix, unless that is
 * longer than a file name may be (255 bytes; a domain may be 253 characters), when the domain is
 * cut short and a hash of it keeps the name its own.
 */
export function domainFile(domain: string, suffix: string): string {
  const name = `${domain}${suffix}`;
  if (name.length <= 255) return name;
  const hash = createHash('sha256').update(domain).digest('hex').slice(0, 16);
  return `${domain.slice(0, 255 - suffix.length - hash.length - 1)}-${hash}${suffix}`;
}

/** `path` (absolute within the system) as a real path below `root`. */
export function under(root: string, path: string): string {
  return root === '/' ? path : join(root, path);
}

/** The modes of the system directories the driver makes: nginx and BIND read below them. */
const DIRECTORY_MODE = 0o755;

/**
 * Makes `dir` and the parents it lacks, each 0755 whatever the process's umask (a service unit's
 * UMask=0077 would otherwise make them unreadable to nginx and BIND).
 */
export function makeDirectory(dir: string): void {
  const first = mkdirSync(dir, { recursive: true });
  if (first === undefined) return;
  for (let made = dir; made.length >= first.length; made = dirname(made)) chmodSync(made, DIRECTORY_MODE);
}

/** Makes `dir` (and its missing parents, 0755) a directory root alone may enter: 0700. */
export function makePrivateDirectory(dir: string): void {
  makeDirectory(dirname(dir));
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o700);
}

/**
 * Makes `dir` (and its missing parents, 0755) a system directory of a service's with exactly
 * `mode`: a link in its place is refused, never followed.
 */
export function makeServiceDirectory(dir: string, uid: number, gid: number, mode: number): void {
  makeDirectory(dirname(dir));
  mkdirSync(dir, { recursive: true });
  // Owner and mode set on what was opened without following a link: a service's user that swaps
  // the directory for a link meanwhile gets a refusal, never root's chmod of the link's target.
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    throw new Error(`${dir} is not a directory`);
  }
  try {
    fchownSync(fd, uid, gid);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes `dir` (when missing, 0755) a directory others may pass through but not list: every file
 * in it is named after a tenant's domain or user, which the account next door has no need to
 * learn. Its owner and group keep theirs. A link in its place is refused, never followed.
 */
export function makeUnlistedDirectory(dir: string): void {
  makeDirectory(dir);
  const found = lstatSync(dir);
  if (!found.isDirectory()) throw new Error(`${dir} is not a directory`);
  chmodSync(dir, found.mode & 0o7777 & ~0o004);
}

/** Gives a Unix socket Berth listens on (in a directory only root writes) its owner and mode. */
export function giveSocket(path: string, uid: number, gid: number, mode: number): void {
  if (!lstatSync(path).isSocket()) throw new Error(`${path} is not a socket`);
  lchownSync(path, uid, gid);
  chmodSync(path, mode);
}

/**
 * Writes a file whole with exactly `mode`, whatever the umask. `temporary`: the name written before
 * the rename, when the file's own tools have one (the user database's `<file>+`, under their lock);
 * a fresh name otherwise.
 */
export function writeFileAtomic(
  path: string,
  content: string | Uint8Array,
  mode: number,
  gid?: number,
  temporary?: string,
): void {
  const dir = dirname(path);
  makeDirectory(dir);
  const next = temporary ?? join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = temporary
    ? openSync(next, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW, mode)
    : openSync(next, 'wx', mode);
  try {
    if (gid !== undefined) fchownSync(fd, 0, gid);
    fchmodSync(fd, mode);
    // Every byte, or a failure (a full disk): a short file is never renamed over the old one.
    writeFileSync(fd, content);
    fsyncSync(fd);
  } catch (error) {
    rmSync(next, { force: true });
    throw error;
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(next, path);
  } catch (error) {
    rmSync(next, { force: true });
    throw error;
  }
  syncDirectory(dir);
}

/**
 * Adds `content` at the end of a file in place and syncs it: for a database of lines whose new lines
 * go last, where replacing the whole file for each would cost as much as the file is long. The file
 * must be a file of `size` bytes still (the one its caller read, under the caller's lock), never a
 * link; otherwise nothing is written. A write cut short (a full disk) is cut off again. A reader
 * may see the new lines before the last of them is whole, never an old line changed.
 */
export function appendToFile(path: string, content: string | Uint8Array, size: number): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
  try {
    const found = fstatSync(fd);
    if (!found.isFile() || found.size !== size) throw new Error(`${path} changed while it was being written`);
    try {
      writeFileSync(fd, content);
      fsyncSync(fd);
    } catch (error) {
      ftruncateSync(fd, size);
      throw error;
    }
  } finally {
    closeSync(fd);
  }
}

/** Syncs a directory, so that what was renamed into it survives a crash. */
export function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Moves a system file or directory (between directories only root writes, never below a home) to
 * `to`, by one rename; false when nothing is at `from` (taken meanwhile by another).
 */
export function moveSystemPath(from: string, to: string): boolean {
  try {
    renameSync(from, to);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

export function readIfExists(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

/** The size of a file (a link is not followed), 0 when there is none. */
export function sizeOf(path: string): number {
  try {
    return lstatSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The whole lines a log has had appended since it was `from` bytes long (from its start, if it has
 * been rotated since), at most `max` bytes of them, and where the next read goes on from. No lines
 * when there is no such file.
 */
export function appendedSince(path: string, from: number, max = 1 << 20): { lines: string; next: number } {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return { lines: '', next: from };
  }
  try {
    const size = fstatSync(fd).size;
    const start = size < from ? 0 : from;
    const text = Buffer.alloc(Math.min(size - start, max));
    const read = readSync(fd, text, 0, text.length, start);
    const whole = text.subarray(0, text.subarray(0, read).lastIndexOf(0x0a) + 1);
    return { lines: whole.toString('utf8'), next: start + whole.length };
  } finally {
    closeSync(fd);
  }
}

/** Renames a system path (in directories only root writes, so that no name is a planted link). */
export function renameSystemPath(from: string, to: string): void {
  renameSync(from, to);
}

/** Removes a file if it is there (a link is removed itself, never its target). */
export function removeFile(path: string): void {
  rmSync(path, { force: true });
}

/**
 * Makes `path` (and its missing parents) a file of root's and `gid`'s with `mode`, empty when it
 * was missing and as it was otherwise, never through a link: a database another program fills.
 */
export function keepFile(path: string, mode: number, gid?: number): void {
  makeDirectory(dirname(path));
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
  try {
    if (gid !== undefined) fchownSync(fd, 0, gid);
    fchmodSync(fd, mode);
  } finally {
    closeSync(fd);
  }
}

/** What writeFileAtomic writes before its rename: a name no other file has. */
const TEMPORARY = /^\.[0-9a-f]{12}\.tmp$/;

/**
 * Removes a directory if it is there and holds nothing but what a write cut short left behind (a
 * process killed between writing a temporary file and renaming it).
 */
export function removeDirectory(path: string): void {
  try {
    for (const name of readdirSync(path)) if (TEMPORARY.test(name)) rmSync(join(path, name), { force: true });
    rmdirSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/** Removes an empty directory if it is there; one that is not empty (or a mount point) throws. */
export function removeEmptyDirectory(path: string): void {
  try {
    rmdirSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

/**
 * Runs `work` with a directory of root's alone (0700, a name no one can guess in the system's
 * temporary directory), removed afterwards whatever happens.
 */
export async function withScratchDirectory<T>(prefix: string, work: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  try {
    return await work(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A stream into a new file of root's alone (0600), in a directory of root's; one already there is refused. */
export function newPrivateFileStream(path: string): WriteStream {
  return createWriteStream(path, { flags: 'wx', mode: 0o600 });
}

/** Writes a file of root's that one group may read, whole, never through a link in its place. */
export function writeGroupFile(path: string, content: string, gid: number, mode: number): void {
  // Written 0600 first, so that no one reads it before its group is set.
  writeFileAtomic(path, content, 0o600);
  if (!lstatSync(path).isFile()) throw new Error(`${path} is not a file`);
  lchownSync(path, 0, gid);
  chmodSync(path, mode);
}

/**
 * Removes a service's directory (never a customer's) and all in it, when there: a link in it is
 * removed, never followed.
 */
export function removeServiceDirectory(path: string): void {
  rmSync(path, { recursive: true, force: true });
}

/** Puts a file back as it was: `content` null means it did not exist. */
export function restoreFile(path: string, content: string | null, mode: number): void {
  if (content === null) removeFile(path);
  else writeFileAtomic(path, content, mode);
}

/**
 * Gives a system file (in a directory only root can write, never below a home) to a service's
 * user: OpenDKIM reads the keys it signs with as its own user. A link there is refused.
 */
export function giveFile(path: string, uid: number, gid: number, mode?: number): void {
  if (!lstatSync(path).isFile()) throw new Error(`${path} is not a file: not given to a service`);
  lchownSync(path, uid, gid);
  if (mode !== undefined) chmodSync(path, mode);
}

/** A site's logs, in its log directory. */
export const SITE_LOGS = ['access.log'] as const;

/** A site's log directory (a system path): `<log_dir>/<domain>`. */
export function siteLogDir(logDir: string, domain: string): string {
  return join(logDir, domainFile(domain, ''));
}

/**
 * A site's log directory: root's with the account's group, which may list it; others may only pass
 * through it (nginx's workers, as `web_user`, open the log by its name), never list it.
 */
export const SITE_LOG_DIRECTORY_MODE = 0o751;
/** A site's log: nginx's workers write it (as `web_user`), the account's group reads it. */
export const SITE_LOG_MODE = 0o640;

/**
 * Makes a site's log directory and its log, the log `writer`'s (nginx's workers open it by a name
 * made of the request's host) with the account's group, before nginx opens it: nginx and
 * logrotate (`copytruncate`) keep an existing file's owner and mode. The directory is root's alone
 * to write, so nothing in it can be a link someone planted; a link is refused all the same.
 */
export function prepareSiteLogs(dir: string, writer: number, gid: number): void {
  makeDirectory(dirname(dir));
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  if (!lstatSync(dir).isDirectory()) throw new Error(`${dir} is not a directory: no logs written there`);
  lchownSync(dir, 0, gid);
  chmodSync(dir, SITE_LOG_DIRECTORY_MODE);
  for (const name of SITE_LOGS) {
    const fd = openSync(
      join(dir, name),
      constants.O_WRONLY | constants.O_CREAT | constants.O_APPEND | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      fchownSync(fd, writer, gid);
      fchmodSync(fd, SITE_LOG_MODE);
    } finally {
      closeSync(fd);
    }
  }
}

/**
 * Makes `path` a link to `target`, in place of what is there (a link, a file; a directory is an
 * error), as root in a directory only root writes: made beside it and renamed over it, so that a
 * reader finds the old link or the new one. `owner`, when given, owns the link itself (nginx
 * serves through a link only to what its owner owns). The target is never looked at.
 */
export function placeLink(path: string, target: string, owner?: { uid: number; gid: number }): void {
  try {
    const found = lstatSync(path);
    const owned = !owner || (found.uid === owner.uid && found.gid === owner.gid);
    if (found.isSymbolicLink() && readlinkSync(path) === target && owned) return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const temporary = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  symlinkSync(target, temporary);
  try {
    if (owner) lchownSync(temporary, owner.uid, owner.gid);
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** The link at `path` points to, or null when there is none (nothing, or something else). */
export function linkTarget(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

export function removeSiteLogs(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
