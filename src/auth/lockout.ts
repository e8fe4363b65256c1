// Brute-force lock-out: after maxFailures failed authentications from one address within any
// window of windowMinutes (a sliding window: failures on both sides of a clock boundary count
// together), every call from that address is refused for lockMinutes, correct credentials included.
// Trusted addresses (a billing system on the same server, calling from 127.0.0.1 like every
// account's code there) are never locked out: their failures are not counted, their calls never
// refused, so no one can lock them out by failing from them. Any other address locks only itself.
import type { BlockList } from 'node:net';
import type { Kysely } from 'kysely';
import type { Config } from '../config/index.ts';
import { ApiError, catalogue } from '../core/errors.ts';
import { countFailure, findLock, forgetExpiredFailures } from '../store/auth-failures.ts';
import type { Database } from '../store/schema.ts';
import { addressList, onList } from './access.ts';

/** How often failures that left the window are swept from the store. */
const SWEEP_INTERVAL_MS = 60_000;

export class Lockout {
  readonly #db: Kysely<Database>;
  readonly #settings: Config['lockout'];
  readonly #now: () => number;
  /** Locks seen by this process, so a locked address is refused without asking the store. */
  readonly #knownLocks = new Map<string, number>();
  /** The failures within the window each address had when it last failed here. */
  readonly #knownFailures = new Map<string, { failures: number; atMs: number }>();

  readonly #onLock: () => void;
  /** The trusted addresses and ranges, or null when there are none (the common case costs nothing). */
  readonly #trusted: BlockList | null;
  #lastSweepMs = 0;

  constructor(
    db: Kysely<Database>,
    settings: Config['lockout'],
    now: () => number = Date.now,
    onLock: () => void = () => {},
    trusted: readonly string[] = [],
  ) {
    this.#db = db;
    this.#settings = settings;
    this.#now = now;
    this.#onLock = onLock;
    this.#trusted = trusted.length > 0 ? addressList(trusted) : null;
  }

  /** Whether the address is one of trusted_addresses, which are never locked out. */
  trusts(address: string): boolean {
    return this.#trusted !== null && onList(this.#trusted, address);
  }

  #refusal(untilMs: number): ApiError {
    const seconds = Math.max(1, Math.ceil((untilMs - this.#now()) / 1000));
    return new ApiError('rate_limited', catalogue.rate_limited.info({ seconds }), undefined, {
      'retry-after': String(seconds),
    });
  }

  /** The 429 for an address with too many password checks waiting at once: retry in a second. */
  busy(): ApiError {
    return new ApiError('rate_limited', catalogue.rate_limited.info({ seconds: 1, busy: true }), undefined, {
      'retry-after': '1',
    });
  }

  /**
   * The 429 for an address this process already knows is locked out, or null: answered as soon as
   * a request arrives, before its body is read, so a storm from a locked address costs little.
   */
  knownLock(address: string): ApiError | null {
    if (this.trusts(address)) return null;
    const until = this.#knownLocks.get(address);
    return until !== undefined && until > this.#now() ? this.#refusal(until) : null;
  }

  /**
   * How many more failures the address may have before it is locked, as far as this process knows
   * (its count when it last failed here, as if none had left the window since); at least one, since
   * an address that is not locked may always try once more.
   */
  failuresLeft(address: string): number {
    if (this.trusts(address)) return this.#settings.maxFailures;
    const known = this.#knownFailures.get(address);
    if (known && this.#now() - known.atMs >= this.#settings.windowMinutes * 60_000) {
      this.#knownFailures.delete(address);
    }
    const failures = this.#knownFailures.get(address)?.failures ?? 0;
    return Math.max(1, this.#settings.maxFailures - failures);
  }

  /** Throws 429 rate_limited while the address is locked out. */
  async check(address: string): Promise<void> {
    if (this.trusts(address)) return;
    const now = this.#now();
    const known = this.#knownLocks.get(address);
    if (known !== undefined) {
      if (known > now) throw this.#refusal(known);
      this.#knownLocks.delete(address);
    }
    const lockedUntilMs = await findLock(this.#db, address);
    if (lockedUntilMs > now) {
      this.#knownLocks.set(address, lockedUntilMs);
      throw this.#refusal(lockedUntilMs);
    }
  }

  async recordFailure(address: string): Promise<void> {
    if (this.trusts(address)) return;
    const now = this.#now();
    const windowMs = this.#settings.windowMinutes * 60_000;
    if (now - this.#lastSweepMs >= SWEEP_INTERVAL_MS) {
      this.#lastSweepMs = now;
      await forgetExpiredFailures(this.#db, now, windowMs);
    }
    const { failures, lockedUntilMs: lockedUntil } = await countFailure(this.#db, address, now, {
      maxFailures: this.#settings.maxFailures,
      windowMs,
      lockMs: this.#settings.lockMinutes * 60_000,
    });
    if (this.#knownFailures.size >= 10_000) this.#knownFailures.clear();
    this.#knownFailures.set(address, { failures, atMs: now });
    if (lockedUntil > this.#now()) {
      if (!this.#knownLocks.has(address)) this.#onLock();
      this.#knownLocks.set(address, lockedUntil);
    }
  }
}
