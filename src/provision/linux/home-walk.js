// @ts-check
// Counts the bytes homes hold, for home.ts's countHomes, in a worker thread of its own: a home of
// millions of files takes seconds to walk, and the server's thread (the API, the mail milters)
// must not wait meanwhile. JavaScript, not TypeScript: a thread loads only JavaScript
// (docs/decisions.md). It keeps home.ts's rules: each directory is reached one component at a
// time from the open one above it (`/proc/self/fd/<fd>/<name>`, looked up in exactly that
// directory), opened with O_NOFOLLOW; a link is counted as a link, never followed. Each home's walk
// stops at its time limit: what it counted so far is then a floor, and says so.
import { closeSync, constants, fstatSync, lstatSync, opendirSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;
const OPEN_DIRECTORY = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK;
/** Names read as they are on disk (the typings know only text encodings). */
const BYTES = /** @type {BufferEncoding} */ ('buffer');
/** How many entries are looked at between two looks at the clock. */
const CLOCK_EVERY = 1024;

/** @typedef {{ homes: string[]; limitMs: number }} WalkRequest */
/** @typedef {{ home: string; bytes: number; cut: string | null }} WalkResult */

class OutOfTime extends Error {}

/** Whether an error means a directory was replaced by a link or removed meanwhile (not followed). */
const replacedOrGone = (/** @type {unknown} */ error) =>
  ['ENOENT', 'ELOOP', 'ENOTDIR'].includes(/** @type {NodeJS.ErrnoException} */ (error).code ?? '');

/**
 * The bytes of the account's files below `home`. What root owns there (the home itself, a shell
 * jail's hard links of system files) is not the account's.
 * @param {string} home
 * @param {number} limitMs
 * @returns {WalkResult}
 */
function count(home, limitMs) {
  const deadline = performance.now() + limitMs;
  let bytes = 0;
  let entries = 0;
  const owned = (/** @type {import('node:fs').Stats} */ stat) => (stat.uid === 0 ? 0 : stat.blocks * 512);
  /** @param {number} fd an open directory */
  const walk = (fd) => {
    bytes += owned(fstatSync(fd));
    // Read a few entries at a time: a directory of millions is never held whole. Names as bytes: a
    // name that is not UTF-8 would not be found again by its decoded form, nor what is below it.
    const dir = opendirSync(`/proc/self/fd/${fd}`, { encoding: BYTES, bufferSize: 128 });
    const here = Buffer.from(`/proc/self/fd/${fd}/`);
    try {
      for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
        if (++entries % CLOCK_EVERY === 0 && performance.now() > deadline)
          throw new OutOfTime(`stopped after ${limitMs / 1000} s, ${entries} entries in`);
        const path = Buffer.concat([here, /** @type {Buffer} */ (/** @type {unknown} */ (entry.name))]);
        let stat;
        try {
          stat = lstatSync(path);
        } catch {
          continue;
        }
        if (!stat.isDirectory()) {
          bytes += owned(stat);
          continue;
        }
        let inner;
        try {
          inner = openSync(path, OPEN_DIRECTORY);
        } catch (error) {
          if (replacedOrGone(error)) continue;
          throw error;
        }
        try {
          walk(inner);
        } finally {
          closeSync(inner);
        }
      }
    } finally {
      dir.closeSync();
    }
  };
  try {
    let fd;
    try {
      fd = openSync(home, OPEN_DIRECTORY);
    } catch (error) {
      // No home, or a link in its place: nothing of the account's is there.
      if (replacedOrGone(error)) return { home, bytes: 0, cut: null };
      throw error;
    }
    try {
      walk(fd);
    } finally {
      closeSync(fd);
    }
    return { home, bytes, cut: null };
  } catch (error) {
    const why = error instanceof OutOfTime ? error.message : `stopped: ${String(error)}`;
    return { home, bytes, cut: why };
  }
}

const { homes, limitMs } = /** @type {WalkRequest} */ (workerData);
for (const home of homes) parentPort?.postMessage(/** @type {WalkResult} */ (count(home, limitMs)));
