// API authentication: which API account is calling, checked against the store on every request so
// that a password reset, access change or deletion (from the portal or the CLI, in this process or
// another) takes effect from the next request on.
import { hash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ApiError, AUTH_DENIED, apiError } from '../core/errors.ts';
import { passwordLengthOk, RESERVED_API_USERS } from '../core/values.ts';
import { type ApiUser, findApiUser, touchApiUser } from '../store/api-users.ts';
import type { Database } from '../store/schema.ts';
import { addressAllowed } from './access.ts';
import type { CryptPool } from './crypt-pool.ts';
import type { Lockout } from './lockout.ts';
import { sha512Crypt } from './sha512-crypt.js';

export interface Credentials {
  user: string;
  password: string;
}

/**
 * Remembers passwords already verified, as SHA-256 of a secret that lives only in this process
 * followed by the password, tied to the stored hash it was verified against: a new hash (a reset)
 * misses the cache. (A keyed one-shot hash: an HMAC imports its key anew on every call, which
 * costs more than the rest of an authenticated request. The digest is a string of 32 latin1 characters:
 * one returned as a Buffer costs four times as much to make, a Buffer made in C++ for every call.)
 */
/** Whether two digests of the same length are equal, in a time that does not depend on where they differ. */
export function sameDigest(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

class VerifiedCredentials {
  readonly #key = randomBytes(32).toString('base64');
  readonly #entries = new Map<string, { hash: string; mac: string }>();

  /** The password as this process alone can compute it, and no one can turn back into it. */
  mac(password: string): string {
    return hash('sha256', `${this.#key}\u0000${password}`, 'binary');
  }

  /** Names one password checked against one stored hash, without revealing the password. */
  keyOf(user: string, storedHash: string, password: string): string {
    return `${user}\u0000${storedHash}\u0000${this.mac(password)}`;
  }

  has(name: string, storedHash: string, password: string): boolean {
    const entry = this.#entries.get(name);
    return entry !== undefined && entry.hash === storedHash && sameDigest(entry.mac, this.mac(password));
  }

  remember(name: string, storedHash: string, password: string): void {
    if (this.#entries.size >= 10_000) this.#entries.clear();
    this.#entries.set(name, { hash: storedHash, mac: this.mac(password) });
  }
}

/** How many password hashes one source address may have computing at once; the rest wait. */
export const HASHES_PER_ADDRESS = 2;

/**
 * Password checks per source address. A check is admitted only while the address has fewer checks
 * unsettled (hashing, waiting, or failed and not yet counted) than it may still fail; an admitted
 * check hashes once one of the address's HASHES_PER_ADDRESS turns is free.
 */
class ChecksPerAddress {
  readonly #unsettled = new Map<string, number>();
  readonly #running = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();

  /** Admits one check when the address has fewer than `allowed` unsettled. */
  admit(address: string, allowed: number): boolean {
    const unsettled = this.#unsettled.get(address) ?? 0;
    if (unsettled >= allowed) return false;
    this.#unsettled.set(address, unsettled + 1);
    return true;
  }

  /** Ends an admitted check, once its outcome has been counted. */
  settle(address: string): void {
    const left = (this.#unsettled.get(address) ?? 1) - 1;
    if (left > 0) this.#unsettled.set(address, left);
    else this.#unsettled.delete(address);
  }

  /** Resolves when the address may start a hash. */
  async take(address: string): Promise<void> {
    const running = this.#running.get(address) ?? 0;
    if (running < HASHES_PER_ADDRESS) {
      this.#running.set(address, running + 1);
      return;
    }
    const queue = this.#waiting.get(address) ?? [];
    this.#waiting.set(address, queue);
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  /** Hands the address's turn to its next waiting hash, or gives it back. */
  give(address: string): void {
    const queue = this.#waiting.get(address);
    const next = queue?.shift();
    if (queue?.length === 0) this.#waiting.delete(address);
    if (next) {
      next();
      return;
    }
    const left = (this.#running.get(address) ?? 1) - 1;
    if (left > 0) this.#running.set(address, left);
    else this.#running.delete(address);
  }
}

// Unknown API users are checked against this, so that they take as long as a wrong password.
const DUMMY_HASH = sha512Crypt(randomBytes(16).toString('hex'));
const TOUCH_INTERVAL_MS = 60_000;

export class Authenticator {
  readonly #db: Kysely<Database>;
  readonly #crypt: CryptPool;
  readonly #lockout: Lockout;
  readonly #verified = new VerifiedCredentials();
  readonly #lastTouched = new Map<string, number>();
  readonly #inFlight = new Map<string, Promise<boolean>>();
  readonly #checks = new ChecksPerAddress();
  readonly #onFailure: () => void;

  constructor(db: Kysely<Database>, crypt: CryptPool, lockout: Lockout, onFailure: () => void = () => {}) {
    this.#db = db;
    this.#crypt = crypt;
    this.#lockout = lockout;
    this.#onFailure = onFailure;
  }

  /** The calling API account, or an ApiError (429, 403) saying why not. */
  async authenticate(credentials: Credentials | null, address: string): Promise<ApiUser> {
    await this.#lockout.check(address);
    if (!credentials) throw apiError('not_authenticated', {});
    // The portal's and the command line's names are never an API account's (see values.ts).
    const user = RESERVED_API_USERS.has(credentials.user)
      ? undefined
      : await findApiUser(this.#db, credentials.user);
    const allowed =
      user !== undefined && (user.access === 'open' || addressAllowed(address, user.allowedIps));
    const ok = await this.attempt(
      address,
      credentials.user,
      user?.passwordHash,
      credentials.password,
      allowed,
    );
    if (!ok || !user) throw new ApiError('forbidden', AUTH_DENIED);
    await this.used(user.name);
    return user;
  }

  /**
   * One login from an address whose lock-out the caller has checked: true when the password matches
   * the stored hash (none: an unknown name, which costs as much as a wrong password) and the caller
   * otherwise `accepts` the login. A failure counts toward the address's lock-out.
   *
   * A password outside 8-128 characters fails without being hashed. The same name, password and
   * hash are hashed once however many calls ask at the same time (a billing system's burst). One
   * address has at most HASHES_PER_ADDRESS hashes computing, and no more checks unsettled (hashing,
   * waiting, or failed and not yet counted) than the lock-out still lets it fail: past that it is
   * answered 429 at once, so no address can hold the hashing workers every other login needs.
   */
  async attempt(
    address: string,
    name: string,
    storedHash: string | undefined,
    password: string,
    accepts: boolean,
  ): Promise<boolean> {
    let admitted = false;
    try {
      let ok = false;
      if (storedHash !== undefined && this.#verified.has(name, storedHash, password)) ok = true;
      else if (passwordLengthOk(password)) {
        const stored = storedHash ?? DUMMY_HASH;
        const key = this.#verified.keyOf(name, stored, password);
        let pending = this.#inFlight.get(key);
        if (!pending) {
          const locked = this.#lockout.knownLock(address);
          if (locked) throw locked;
          if (!this.#checks.admit(address, this.#lockout.failuresLeft(address))) throw this.#lockout.busy();
          admitted = true;
          pending = this.#hash(password, stored, address).finally(() => this.#inFlight.delete(key));
          this.#inFlight.set(key, pending);
        }
        ok = (await pending) && storedHash !== undefined;
        if (ok) this.#verified.remember(name, stored, password);
      }
      if (ok && accepts) return true;
      this.#onFailure();
      await this.#lockout.recordFailure(address);
      return false;
    } finally {
      if (admitted) this.#checks.settle(address);
    }
  }

  async #hash(password: string, stored: string, address: string): Promise<boolean> {
    await this.#checks.take(address);
    try {
      return await this.#crypt.verify(password, stored);
    } finally {
      this.#checks.give(address);
    }
  }

  /** A password in the one form it may be kept in memory (CONTRACT §3): a keyed SHA-256. */
  fingerprint(password: string): string {
    return this.#verified.mac(password);
  }

  /**
   * Records "last used" for the API Manager, at most once a minute per API account: a promise to
   * wait for when it writes, nothing otherwise (most calls, which need not wait at all).
   */
  used(name: string): Promise<void> | undefined {
    const now = Date.now();
    if (now - (this.#lastTouched.get(name) ?? 0) < TOUCH_INTERVAL_MS) return undefined;
    this.#lastTouched.set(name, now);
    return touchApiUser(this.#db, name, new Date(now));
  }
}
