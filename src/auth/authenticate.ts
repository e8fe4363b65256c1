// API authentication: which API account is calling, checked against the store on every request so
// that a password reset, access change or deletion (from the portal or the CLI, in this process or
// another) takes effect from the next request on.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ApiError, AUTH_DENIED, apiError } from '../errors.ts';
import { type ApiUser, findApiUser, touchApiUser } from '../store/api-users.ts';
import type { Database } from '../store/schema.ts';
import { passwordLengthOk, RESERVED_API_USERS } from '../values.ts';
import { addressAllowed } from './access.ts';
import type { CryptPool } from './crypt-pool.ts';
import type { Lockout } from './lockout.ts';
import { sha512Crypt } from './sha512-crypt.ts';

export interface Credentials {
  user: string;
  password: string;
}

/**
 * Remembers passwords already verified, as SHA-256 of a secret that lives only in this process
 * followed by the password, tied to the stored hash it was verified against: a new hash (a reset)
 * misses the cache. (A keyed one-shot hash: an HMAC imports its key anew on every call, which
 * costs more than the rest of an authenticated request.)
 */
class VerifiedCredentials {
  readonly #key = randomBytes(32).toString('base64');
  readonly #entries = new Map<string, { hash: string; mac: Buffer }>();

  #mac(password: string): Buffer {
    return hash('sha256', `${this.#key}\u0000${password}`, 'buffer');
  }

  /** Names one password checked against one stored hash, without revealing the password. */
  keyOf(user: string, storedHash: string, password: string): string {
    return `${user}\u0000${storedHash}\u0000${this.#mac(password).toString('base64')}`;
  }

  has(name: string, storedHash: string, password: string): boolean {
    const entry = this.#entries.get(name);
    return (
      entry !== undefined && entry.hash === storedHash && timingSafeEqual(entry.mac, this.#mac(password))
    );
  }

  remember(name: string, storedHash: string, password: string): void {
    if (this.#entries.size >= 10_000) this.#entries.clear();
    this.#entries.set(name, { hash: storedHash, mac: this.#mac(password) });
  }
}

/** How many password hashes one source address may have computing at once; the rest wait. */
export const HASHES_PER_ADDRESS = 2;

/** A queue of hashing turns per source address: a few at a time, a bounded number waiting. */
class TurnsPerAddress {
  readonly #running = new Map<string, number>();
  readonly #waiting = new Map<string, (() => void)[]>();
  readonly #maxWaiting: number;

  constructor(maxWaiting: number) {
    this.#maxWaiting = maxWaiting;
  }

  /** Resolves when the address may start a hash; false when too many of its checks already wait. */
  async take(address: string): Promise<boolean> {
    const running = this.#running.get(address) ?? 0;
    if (running < HASHES_PER_ADDRESS) {
      this.#running.set(address, running + 1);
      return true;
    }
    const queue = this.#waiting.get(address) ?? [];
    if (queue.length >= this.#maxWaiting) return false;
    this.#waiting.set(address, queue);
    await new Promise<void>((resolve) => queue.push(resolve));
    return true;
  }

  /** Hands the address's turn to its next waiting check, or gives it back. */
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
  readonly #turns: TurnsPerAddress;
  readonly #onFailure: () => void;

  constructor(
    db: Kysely<Database>,
    crypt: CryptPool,
    lockout: Lockout,
    maxQueuedPerAddress: number,
    onFailure: () => void = () => {},
  ) {
    this.#db = db;
    this.#crypt = crypt;
    this.#lockout = lockout;
    this.#turns = new TurnsPerAddress(Math.max(0, maxQueuedPerAddress - HASHES_PER_ADDRESS));
    this.#onFailure = onFailure;
  }

  /**
   * Checks a password against a stored hash (none: an unknown name, which costs as much as a
   * wrong password). A password outside 8-128 characters fails without being hashed. The same
   * name, password and hash are hashed once however many calls ask at the same time (a billing
   * system's burst); one address has at most HASHES_PER_ADDRESS hashes computing, and computing
   * and waiting together no more than the lock-out lets it fail, past which it is answered 429 at once, so that no
   * address can hold the hashing workers that every other caller's login needs.
   */
  async passwordMatches(
    name: string,
    storedHash: string | undefined,
    password: string,
    address: string,
  ): Promise<boolean> {
    // A password of a length no account can have is never hashed: it costs nothing to refuse.
    if (!passwordLengthOk(password)) return false;
    if (storedHash !== undefined && this.#verified.has(name, storedHash, password)) return true;
    const stored = storedHash ?? DUMMY_HASH;
    const key = this.#verified.keyOf(name, stored, password);
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#hashInTurn(password, stored, address).finally(() => this.#inFlight.delete(key));
      this.#inFlight.set(key, pending);
    }
    const ok = (await pending) && storedHash !== undefined;
    if (ok) this.#verified.remember(name, stored, password);
    return ok;
  }

  async #hashInTurn(password: string, stored: string, address: string): Promise<boolean> {
    if (!(await this.#turns.take(address))) throw this.#lockout.busy();
    try {
      return await this.#crypt.verify(password, stored);
    } finally {
      this.#turns.give(address);
    }
  }

  /** The calling API account, or an ApiError (429, 403) saying why not. */
  async authenticate(credentials: Credentials | null, address: string): Promise<ApiUser> {
    await this.#lockout.check(address);
    if (!credentials) throw apiError('not_authenticated', {});
    // The portal's and the command line's names are never an API account's (see values.ts).
    const user = RESERVED_API_USERS.has(credentials.user)
      ? undefined
      : await findApiUser(this.#db, credentials.user);
    const passwordOk = await this.passwordMatches(
      credentials.user,
      user?.passwordHash,
      credentials.password,
      address,
    );
    const allowed =
      user !== undefined && (user.access === 'open' || addressAllowed(address, user.allowedIps));
    if (!user || !passwordOk || !allowed) {
      this.#onFailure();
      await this.#lockout.recordFailure(address);
      throw new ApiError('forbidden', AUTH_DENIED);
    }
    await this.#touch(user.name);
    return user;
  }

  /** Records "last used" for the API Manager, at most once a minute per API account. */
  async #touch(name: string): Promise<void> {
    const now = Date.now();
    if (now - (this.#lastTouched.get(name) ?? 0) < TOUCH_INTERVAL_MS) return;
    this.#lastTouched.set(name, now);
    await touchApiUser(this.#db, name, new Date(now));
  }
}
