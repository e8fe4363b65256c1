// API authentication: which API account is calling, checked against the store on every request so
// that a password reset, access change or deletion (from the portal or the CLI, in this process or
// another) takes effect from the next request on.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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
 * Remembers passwords already verified, as an HMAC under a key that lives only in this process,
 * tied to the stored hash it was verified against: a new hash (a reset) misses the cache.
 */
class VerifiedCredentials {
  readonly #key = randomBytes(32);
  readonly #entries = new Map<string, { hash: string; mac: Buffer }>();

  #mac(password: string): Buffer {
    return createHmac('sha256', this.#key).update(password, 'utf8').digest();
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

  constructor(db: Kysely<Database>, crypt: CryptPool, lockout: Lockout) {
    this.#db = db;
    this.#crypt = crypt;
    this.#lockout = lockout;
  }

  async #passwordMatches(user: ApiUser | undefined, password: string): Promise<boolean> {
    if (!user) {
      await this.#crypt.verify(password, DUMMY_HASH);
      return false;
    }
    if (this.#verified.has(user, password)) return true;
    const ok = await this.#crypt.verify(password, user.passwordHash);
    if (ok) this.#verified.remember(user, password);
    return ok;
  }

  /** The calling API account, or an ApiError (429, 403) saying why not. */
  async authenticate(credentials: Credentials | null, address: string): Promise<ApiUser> {
    await this.#lockout.check(address);
    if (!credentials) throw apiError('not_authenticated', {});
    const user = await findApiUser(this.#db, credentials.user);
    const passwordOk = await this.#passwordMatches(user, credentials.password);
    const allowed =
      user !== undefined && (user.access === 'open' || addressAllowed(address, user.allowedIps));
    if (!user || !passwordOk || !allowed) {
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
