// @ts-check
// SHA-512 crypt ("$6$", as in /etc/shadow), after Ulrich Drepper's specification. Pure and
// synchronous: the server runs it in worker threads (crypt-pool.ts), never on the event loop.
// JavaScript typed by JSDoc, and checked as the TypeScript is: a hashing thread loads only this and
// crypt-worker.js, so it never starts a TypeScript stripper of its own (some 20 MB a thread).
import { createHash, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const ALPHABET = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const DEFAULT_ROUNDS = 5000;
const MIN_ROUNDS = 1000;
/** Hashes asking for more rounds than this are refused rather than left to stall a worker. */
export const MAX_ROUNDS = 1_000_000;

/**
 * The order in which the 64 digest bytes are written out, three at a time.
 * @type {ReadonlyArray<readonly [number, number, number]>}
 */
const PERMUTATION = [
  [0, 21, 42],
  [22, 43, 1],
  [44, 2, 23],
  [3, 24, 45],
  [25, 46, 4],
  [47, 5, 26],
  [6, 27, 48],
  [28, 49, 7],
  [50, 8, 29],
  [9, 30, 51],
  [31, 52, 10],
  [53, 11, 32],
  [12, 33, 54],
  [34, 55, 13],
  [56, 14, 35],
  [15, 36, 57],
  [37, 58, 16],
  [59, 17, 38],
  [18, 39, 60],
  [40, 61, 19],
  [62, 20, 41],
];

const HASH_PATTERN = /^\$6\$(?:rounds=([0-9]{1,10})\$)?([^$:\n]{0,16})\$([./0-9A-Za-z]{86})$/;

/** @param {Buffer[]} parts */
function sha512(...parts) {
  const hash = createHash('sha512');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/**
 * @param {Buffer} source
 * @param {number} length
 */
function repeatTo(source, length) {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i += source.length) source.copy(out, i, 0, Math.min(source.length, length - i));
  return out;
}

/** @param {Buffer} digest */
function encode(digest) {
  let out = '';
  /** @type {(value: number, chars: number) => void} */
  const put = (value, chars) => {
    for (let i = 0; i < chars; i++) {
      out += ALPHABET[value & 0x3f];
      value >>>= 6;
    }
  };
  /** @param {number} i */
  const at = (i) => /** @type {number} */ (digest[i]);
  for (const [a, b, c] of PERMUTATION) put((at(a) << 16) | (at(b) << 8) | at(c), 4);
  put(at(63), 2);
  return out;
}

/**
 * @param {Buffer} password
 * @param {Buffer} salt
 * @param {number} rounds
 */
function digestOf(password, salt, rounds) {
  const b = sha512(password, salt, password);
  const a = createHash('sha512').update(password).update(salt);
  let n = password.length;
  for (; n > 64; n -= 64) a.update(b);
  a.update(b.subarray(0, n));
  for (n = password.length; n > 0; n >>= 1) a.update(n & 1 ? b : password);
  const digestA = a.digest();

  const dp = createHash('sha512');
  for (let i = 0; i < password.length; i++) dp.update(password);
  const p = repeatTo(dp.digest(), password.length);

  const ds = createHash('sha512');
  for (let i = 0; i < 16 + /** @type {number} */ (digestA[0]); i++) ds.update(salt);
  const s = repeatTo(ds.digest(), salt.length);

  // Each round's input laid out in one buffer and hashed in one call: a Hash object a round cost
  // four times as much as the hashing.
  const input = Buffer.allocUnsafe(s.length + 3 * Math.max(p.length, 64));
  let c = digestA;
  for (let i = 0; i < rounds; i++) {
    let n = (i & 1 ? p : c).copy(input, 0);
    if (i % 3) n += s.copy(input, n);
    if (i % 7) n += p.copy(input, n);
    n += (i & 1 ? c : p).copy(input, n);
    c = hash('sha512', input.subarray(0, n), 'buffer');
  }
  return c;
}

function saltText() {
  const bytes = randomBytes(16);
  let salt = '';
  for (const byte of bytes) salt += ALPHABET[byte & 0x3f];
  return salt;
}

/**
 * Hashes a password with a fresh random salt.
 * @param {string} password
 * @param {{ salt?: string; rounds?: number }} [options]
 * @returns {string}
 */
export function sha512Crypt(password, options = {}) {
  const rounds = options.rounds ?? DEFAULT_ROUNDS;
  const salt = (options.salt ?? saltText()).slice(0, 16);
  const digest = digestOf(Buffer.from(password, 'utf8'), Buffer.from(salt, 'utf8'), rounds);
  const prefix = options.rounds === undefined ? '$6$' : `$6$rounds=${rounds}$`;
  return `${prefix}${salt}$${encode(digest)}`;
}

/**
 * Whether `password` matches `hash`. Anything but a well-formed `$6$` hash with a sane round count
 * (`*`, `!`, empty, other schemes) never matches, and never throws.
 * @param {string} password
 * @param {string} hash
 * @returns {boolean}
 */
export function verifySha512Crypt(password, hash) {
  const match = HASH_PATTERN.exec(hash);
  if (!match) return false;
  const rounds = match[1] === undefined ? DEFAULT_ROUNDS : Number(match[1]);
  if (rounds < MIN_ROUNDS || rounds > MAX_ROUNDS) return false;
  const salt = Buffer.from(/** @type {string} */ (match[2]), 'utf8');
  const expected = Buffer.from(/** @type {string} */ (match[3]), 'ascii');
  const actual = Buffer.from(encode(digestOf(Buffer.from(password, 'utf8'), salt, rounds)), 'ascii');
  return timingSafeEqual(actual, expected);
}
