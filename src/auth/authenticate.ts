// API authentication: which API account is calling, checked against the store on every request so
// that a password reset, access change or deletion (from the portal or the CLI, in this process or
// another) takes effect from the next request on.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import { ApiError, AUTH_DENIED, apiError } from '../errors.ts';
import { type ApiUser, findApiUser, touchApiUser } from '../store/api-users.ts';
import type { Database } from '../store/schema.ts';
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

  has(user: ApiUser, password: string): boolean {
    const entry = this.#entries.get(user.name);
    return (
      entry !== undefined &&
      entry.hash === user.passwordHash &&
      timingSafeEqual(entry.mac, this.#mac(password))
    );
  }

  remember(user: ApiUser, password: string): void {
    if (this.#entries.size >= 10_000) this.#entries.clear();
    this.#entries.set(user.name, { hash: user.passwordHash, mac: this.#mac(password) });
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
  readonly #queuedByAddress = new Map<string, number>();
  readonly #maxQueuedPerAddress: number;
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
    this.#maxQueuedPerAddress = maxQueuedPerAddress;
    this.#onFailure = onFailure;
  }

  /**
   * Checks a password, hashing at most once for the same user, password and stored hash however
   * many calls ask at the same time (a billing system's burst; an attacker's storm). One address
   * may have only as many different passwords in the hashing queue at once as the lock-out lets it
   * fail; past that it is answered 429 at once, so no address can fill the queue other callers use.
   */
  async #passwordMatches(
    name: string,
    user: ApiUser | undefined,
    password: string,
    address: string,
  ): Promise<boolean> {
    if (user && this.#verified.has(user, password)) return true;
    const stored = user?.passwordHash ?? DUMMY_HASH;
    const key = this.#verified.keyOf(name, stored, password);
    let pending = this.#inFlight.get(key);
    if (!pending) {
      const queued = this.#queuedByAddress.get(address) ?? 0;
      if (queued >= this.#maxQueuedPerAddress) throw this.#lockout.busy();
      this.#queuedByAddress.set(address, queued + 1);
      pending = this.#crypt.verify(password, stored).finally(() => {
        this.#inFlight.delete(key);
        const left = (this.#queuedByAddress.get(address) ?? 1) - 1;
        if (left > 0) this.#queuedByAddress.set(address, left);
        else this.#queuedByAddress.delete(address);
      });
      this.#inFlight.set(key, pending);
    }
    const ok = (await pending) && user !== undefined;
    if (ok) this.#verified.remember(user, password);
    return ok;
  }

  /** The calling API account, or an ApiError (429, 403) saying why not. */
  async authenticate(credentials: Credentials | null, address: string): Promise<ApiUser> {
    await this.#lockout.check(address);
    if (!credentials) throw apiError('not_authenticated', {});
    const user = await findApiUser(this.#db, credentials.user);
    const passwordOk = await this.#passwordMatches(credentials.user, user, credentials.password, address);
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
