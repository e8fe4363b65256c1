// @ts-check
// Removes a customer's tree, for home.ts's removeTree, removeHome and removeOwnedBy, in a worker
// thread of its own: a mailbox or a home of millions of files, or a chain of directories 30,000
// deep, takes seconds to remove, and the server's thread (the API, the mail milters) must not wait
// meanwhile. JavaScript, not TypeScript: a thread loads only JavaScript (docs/decisions.md).
//
// It keeps home.ts's rules: each directory is reached one component at a time from the open one
// above it (`/proc/self/fd/<fd>/<name>`, looked up in exactly that directory), opened with
// O_NOFOLLOW; a link is unlinked, never followed. The walk is a loop, not a recursion: it holds
// the directory it empties and the identity (device, inode) of each one above it, never a
// descriptor per level, so no depth exhausts the stack or the descriptors. Going back up opens
// `..` of the directory just emptied and checks it is the very directory it came down from
// (fts's check, as GNU rm makes it): a directory the account moved meanwhile stops the removal,
// which removes nothing outside what it came down into. Names are read a batch at a time
// (opendir), never a whole directory of millions at once, as bytes: a name that is not UTF-8 is
// found again by what it is on disk. A directory on another filesystem (a btrfs subvolume, a
// mount) is not entered: the caller deletes the account's subvolumes by id (user/quota.ts).
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  rmdirSync,
  unlinkSync,
} from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const OPEN_DIRECTORY = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
/** Names read as they are on disk (the typings know only text encodings). */
const BYTES = /** @type {BufferEncoding} */ ('buffer');
/** How many names are read from a directory at once. */
const BATCH = 256;
/** How deep removeOwnedBy looks into other users' writable directories for the uid's files. */
const OTHERS_DEPTH = 256;

/**
 * @typedef {{ op: 'tree'; top: string; components: string[] }
 *   | { op: 'owned'; dir: string; uid: number }} RemovalRequest
 */

/** A link where a directory was, or a directory moved away during the removal: never followed. */
class Unsafe extends Error {
  code = 'UNSAFE';
}

/** A directory on another filesystem (a subvolume, a mount), not entered. */
class OtherFilesystem extends Error {
  code = 'EXDEV';
}

const codeOf = (/** @type {unknown} */ error) => /** @type {NodeJS.ErrnoException} */ (error).code ?? '';
const gone = (/** @type {unknown} */ error) => codeOf(error) === 'ENOENT';

/** `/proc/self/fd/<fd>/<name>`: `name` looked up in exactly the directory `fd` holds. */
const beneath = (/** @type {number} */ fd, /** @type {Buffer} */ name) =>
  Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), name]);

/** Opens a directory, a link or anything else there being Unsafe. */
function openDirectory(/** @type {string | Buffer} */ path, /** @type {string} */ shown) {
  try {
    return openSync(path, OPEN_DIRECTORY);
  } catch (error) {
    if (codeOf(error) === 'ELOOP' || codeOf(error) === 'ENOTDIR')
      throw new Unsafe(`${shown} is a symbolic link or not a directory: not followed`);
    throw error;
  }
}

/** Unlinks what is not a directory (a link itself, never what it points to); gone already is done. */
function unlinkEntry(/** @type {Buffer} */ path) {
  try {
    unlinkSync(path);
  } catch (error) {
    if (!gone(error)) throw error;
  }
}

/**
 * Unlinks every entry of the directory open as `fd` that is not a directory, a batch of names at a
 * time, until it meets a directory: that one is returned opened (with its name and inode), for the
 * walk to go down into. Null when nothing is left but what was removed.
 * @param {number} fd
 * @param {number} device the filesystem of the tree
 * @param {() => string} shown where `fd` is, for messages
 */
function nextDirectory(fd, device, shown) {
  const dir = opendirSync(`/proc/self/fd/${fd}`, { encoding: BYTES, bufferSize: BATCH });
  try {
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      const name = /** @type {Buffer} */ (/** @type {unknown} */ (entry.name));
      const path = beneath(fd, name);
      let stat;
      try {
        stat = lstatSync(path);
      } catch (error) {
        if (gone(error)) continue;
        throw error;
      }
      if (!stat.isDirectory()) {
        unlinkEntry(path);
        continue;
      }
      let inner;
      try {
        inner = openSync(path, OPEN_DIRECTORY);
      } catch (error) {
        if (gone(error)) continue;
        // Replaced by a link or a file since the lstat: unlinked as such.
        if (codeOf(error) === 'ELOOP' || codeOf(error) === 'ENOTDIR') {
          unlinkEntry(path);
          continue;
        }
        throw error;
      }
      const innerStat = fstatSync(inner);
      if (innerStat.dev !== device) {
        closeSync(inner);
        throw new OtherFilesystem(
          `${shown()}/${name.toString()} is on another filesystem (a subvolume or a mount): not entered`,
        );
      }
      return { name, fd: inner, ino: innerStat.ino };
    }
    return null;
  } finally {
    dir.closeSync();
  }
}

/**
 * Empties the directory open as `top` (left open, the caller's), depth first, in a loop.
 * @param {number} top
 * @param {string} shown its path, for messages
 */
function empty(top, shown) {
  const { dev: device, ino: topIno } = fstatSync(top);
  /** Each level above the current directory: its inode, and the name of the one below it. */
  /** @type {{ ino: number; name: Buffer }[]} */
  const above = [];
  const where = () => [shown, ...above.map((level) => level.name.toString())].join('/');
  let fd = top;
  let ino = topIno;
  try {
    for (;;) {
      const below = nextDirectory(fd, device, where);
      if (below) {
        above.push({ ino, name: below.name });
        if (fd !== top) closeSync(fd);
        fd = below.fd;
        ino = below.ino;
        continue;
      }
      const level = above.pop();
      if (!level) return;
      // Back up through `..` of the directory just emptied: the very one the walk came down from,
      // or the account moved something meanwhile and the walk stops.
      const parent = openSync(`/proc/self/fd/${fd}/..`, OPEN_DIRECTORY);
      const parentStat = fstatSync(parent);
      if (fd !== top) closeSync(fd);
      fd = parent;
      if (parentStat.dev !== device || parentStat.ino !== level.ino)
        throw new Unsafe(`${where()}/${level.name.toString()} was moved during its removal`);
      if (above.length === 0) {
        closeSync(parent);
        fd = top;
      }
      ino = level.ino;
      try {
        rmdirSync(beneath(fd, level.name));
      } catch (error) {
        // Gone already is done; what appeared in it meanwhile is emptied on the next pass.
        if (!gone(error) && codeOf(error) !== 'ENOTEMPTY') throw error;
      }
    }
  } finally {
    if (fd !== top) closeSync(fd);
  }
}

/**
 * Removes `<top>/<components…>` (top a directory only root writes) and everything in it, reached
 * without links; a link on the way removes nothing. Nothing there: nothing to do.
 * @param {string} top
 * @param {string[]} components
 */
function removeTree(top, components) {
  const last = components.at(-1);
  if (last === undefined) throw new Error('removeTree needs a path below its top');
  /** @type {number[]} */
  const opened = [];
  try {
    /** The directory holding `last`, reached without links; null when something on the way is gone. */
    const parent = (() => {
      try {
        opened.push(openDirectory(top, top));
        for (const [i, name] of components.slice(0, -1).entries()) {
          const shown = components.slice(0, i + 1).join('/');
          opened.push(
            openDirectory(beneath(/** @type {number} */ (opened.at(-1)), Buffer.from(name)), shown),
          );
        }
        return /** @type {number} */ (opened.at(-1));
      } catch (error) {
        if (gone(error)) return null;
        throw error;
      }
    })();
    if (parent === null) return;
    const path = beneath(parent, Buffer.from(last));
    let stat;
    try {
      stat = lstatSync(path);
    } catch (error) {
      if (gone(error)) return;
      throw error;
    }
    if (!stat.isDirectory()) return unlinkEntry(path);
    const shown = components.join('/');
    const fd = openDirectory(path, shown);
    try {
      if (fstatSync(fd).dev !== fstatSync(parent).dev)
        throw new OtherFilesystem(`${shown} is on another filesystem (a subvolume or a mount): not entered`);
      // What the account wrote into it meanwhile is emptied on another pass.
      for (let pass = 1; ; pass++) {
        empty(fd, shown);
        try {
          return rmdirSync(path);
        } catch (error) {
          if (gone(error)) return;
          if (codeOf(error) !== 'ENOTEMPTY' || pass === 3) throw error;
        }
      }
    } finally {
      closeSync(fd);
    }
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

/**
 * Removes whatever `uid` owns below `dir` (a directory every user may write): see home.ts's
 * removeOwnedBy. Other users' writable directories are looked into, OTHERS_DEPTH deep at most,
 * each level's descriptor held while below it. Returns what was removed.
 * @param {string} dir
 * @param {number} uid
 */
function removeOwned(dir, uid) {
  /** @type {string[]} */
  const removed = [];
  let top;
  try {
    top = openDirectory(dir, dir);
  } catch (error) {
    if (gone(error) || error instanceof Unsafe) return removed;
    throw error;
  }
  const device = fstatSync(top).dev;
  /** @type {{ fd: number; dir: import('node:fs').Dir; at: string }[]} */
  const stack = [
    { fd: top, dir: opendirSync(`/proc/self/fd/${top}`, { encoding: BYTES, bufferSize: BATCH }), at: dir },
  ];
  try {
    while (stack.length > 0) {
      const level = /** @type {(typeof stack)[number]} */ (stack.at(-1));
      const entry = level.dir.readSync();
      if (entry === null) {
        stack.pop();
        level.dir.closeSync();
        closeSync(level.fd);
        continue;
      }
      const name = /** @type {Buffer} */ (/** @type {unknown} */ (entry.name));
      const path = beneath(level.fd, name);
      const at = `${level.at}/${name.toString()}`;
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        continue;
      }
      // A directory of another filesystem is a mount: not entered. (Only directories: overlayfs
      // gives a file the device of the layer it lies in, not the overlay's.)
      if (stat.isDirectory() && stat.dev !== device) continue;
      try {
        if (stat.uid === uid) {
          if (stat.isDirectory()) {
            const fd = openDirectory(path, at);
            try {
              empty(fd, at);
            } finally {
              closeSync(fd);
            }
            rmdirSync(path);
          } else unlinkSync(path);
          removed.push(at);
        } else if (stat.isDirectory() && (stat.mode & 0o022) !== 0 && stack.length < OTHERS_DEPTH) {
          const fd = openDirectory(path, at);
          if (fstatSync(fd).dev !== device) closeSync(fd);
          else
            stack.push({
              fd,
              dir: opendirSync(`/proc/self/fd/${fd}`, { encoding: BYTES, bufferSize: BATCH }),
              at,
            });
        }
      } catch (error) {
        // Replaced by a link, moved or removed meanwhile (by another account): not followed.
        if (!(error instanceof Unsafe) && !gone(error)) throw error;
      }
    }
  } finally {
    for (const level of stack) {
      level.dir.closeSync();
      closeSync(level.fd);
    }
  }
  return removed;
}

const request = /** @type {RemovalRequest} */ (workerData);
try {
  /** @type {string[]} */
  let removed = [];
  if (request.op === 'tree') removeTree(request.top, request.components);
  else removed = removeOwned(request.dir, request.uid);
  parentPort?.postMessage({ removed });
} catch (error) {
  parentPort?.postMessage({
    error: { message: String(/** @type {Error} */ (error).message ?? error), code: codeOf(error) },
  });
}
