// How an account's holder proves who it is (CONTRACT §14): the account's user name and password
// (the panel's login, HTTP Basic on the customer API) or an API token the holder made (Bearer).
// Every server of a fleet checks against the store (docs/architecture.md), through the same hashing
// pool as the API accounts. A suspended account's holder is told so only once the credentials are
// right: no one learns it without them.
//
// The lock-out (§3) is kept for holders apart from the API accounts', and harder to walk around,
// since the account next door can try from the server itself: failures count per network (all of
// loopback as one, since every 127.x address is the machine's own; an IPv6 /64 as one, since one
// host has them all) and per account (past the limit, the account's password logins wait out the
// lock from anywhere; single sign-on from billing still lets its holder in). trusted_addresses,
// which spare a billing system's API calls, spare no holder login.
import { isIPv4, isIPv6 } from 'node:net';
import { ApiError, AUTH_DENIED, apiError, catalogue } from '../core/errors.ts';
import type { Services } from '../services.ts';
import { type Account, findAccount } from '../store/accounts.ts';
import {
  adoptPasswordHash,
  looksLikeToken,
  passwordHashOf,
  tokenHash,
  tokenOwner,
  touchToken,
} from '../store/holder-credentials.ts';

const USER = /^[a-z][a-z0-9]{0,15}$/;

/**
 * The network a holder's login is counted by: loopback as one, an IPv4 address as itself, an IPv6
 * address by its /64. Never an address: no trusted address can match it.
 */
export function holderNetwork(address: string): string {
  const v4 = address.startsWith('::ffff:') && isIPv4(address.slice(7)) ? address.slice(7) : address;
  if (isIPv4(v4)) return v4.startsWith('127.') ? 'holders@loopback' : `holders@${v4}`;
  if (!isIPv6(v4)) return `holders@${v4}`;
  if (v4 === '::1') return 'holders@loopback';
  const [head = '', tail = ''] = v4.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = v4.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return `holders@${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** The lock-out keys of a holder's login: its network, and the account it names (when a name). */
function lockKeys(address: string, user: string): string[] {
  return [holderNetwork(address), ...(USER.test(user) ? [`account@${user}`] : [])];
}

/** 429 while any key is locked; an account's lock says that it is the account's. */
async function checkLocks(services: Services, keys: readonly string[]): Promise<void> {
  for (const key of keys)
    try {
      await services.lockout.check(key);
    } catch (error) {
      if (!(error instanceof ApiError) || !key.startsWith('account@')) throw error;
      const seconds = Number(error.headers['retry-after'] ?? 1);
      throw new ApiError('rate_limited', catalogue.rate_limited.info({ seconds, account: true }), undefined, {
        'retry-after': String(seconds),
      });
    }
}

/** How many password checks one account may have in flight on this server at once. */
const CHECKS_PER_ACCOUNT = 2;
const checking = new Map<string, number>();

/**
 * One password check of a holder's login, its failure counted against every key. An account has at
 * most CHECKS_PER_ACCOUNT checks in flight (more are 429 at once), and its lock is looked at again
 * once the hash is known: guesses sent all at once from many networks are not all checked before
 * the account's lock falls, nor is a right one among them let in after it.
 */
async function attemptLogin(
  services: Services,
  address: string,
  user: string,
  hash: string | undefined,
  password: string,
  accepts: boolean,
): Promise<boolean> {
  const keys = lockKeys(address, user);
  const [network, ...others] = keys;
  await checkLocks(services, keys);
  const inFlight = checking.get(user) ?? 0;
  if (inFlight >= CHECKS_PER_ACCOUNT) throw services.lockout.busy();
  checking.set(user, inFlight + 1);
  let ok: boolean;
  try {
    ok = await services.auth.attempt(network!, `holder:${user}`, hash, password, accepts);
  } finally {
    const left = (checking.get(user) ?? 1) - 1;
    if (left > 0) checking.set(user, left);
    else checking.delete(user);
  }
  if (!ok) for (const key of others) await services.lockout.recordFailure(key);
  else await checkLocks(services, others);
  return ok;
}

/**
 * The account's password hash: the store's, or for an account made before the store kept one,
 * the one its own server's system has (kept in the store from then on).
 */
async function storedHash(services: Services, account: Account): Promise<string | undefined> {
  const { db } = services.store;
  const stored = await passwordHashOf(db, account.user);
  if (stored) return stored;
  if ((account.server ?? services.fleet.self) !== services.fleet.self) return undefined;
  const system = services.driver.systemPasswordHash?.(account.user);
  if (system) await adoptPasswordHash(db, account.user, system);
  return system;
}

function refuseSuspended(account: Account): Account {
  if (account.suspension) throw apiError('account_suspended', { user: account.user });
  return account;
}

/**
 * The account whose user name and password these are; otherwise 403 (a failure counted toward
 * the address's lock-out), 429 while the address is locked out, 403 `account_suspended`.
 */
export async function authenticateHolder(
  services: Services,
  user: string,
  password: string,
  address: string,
): Promise<Account> {
  await checkLocks(services, lockKeys(address, user));
  const account = USER.test(user) ? await findAccount(services.store.db, user) : undefined;
  const hash = account ? await storedHash(services, account) : undefined;
  const ok = await attemptLogin(services, address, user, hash, password, account !== undefined);
  if (!ok || !account) throw new ApiError('forbidden', AUTH_DENIED);
  return refuseSuspended(account);
}

/**
 * The hash `password` was found to match, when it is the account's password now (the holder's own
 * change_password asks it); null otherwise.
 */
export async function holderPasswordIs(
  services: Services,
  account: Account,
  password: string,
  address: string,
): Promise<string | null> {
  const hash = await storedHash(services, account);
  const ok = await attemptLogin(services, address, account.user, hash, password, true);
  return ok && hash !== undefined ? hash : null;
}

/** The account an API token belongs to, with the token's name; failures count as a wrong password. */
export async function authenticateToken(
  services: Services,
  token: string,
  address: string,
): Promise<{ account: Account; name: string }> {
  // A token is 256 random bits: no one guesses one, so a right one is never refused for the
  // failures of its network (a neighbour failing from loopback does not stop a holder's scripts).
  const network = holderNetwork(address);
  const { db } = services.store;
  const hash = tokenHash(token);
  const owner = looksLikeToken(token) ? await tokenOwner(db, hash) : undefined;
  const account = owner ? await findAccount(db, owner.user) : undefined;
  if (!owner || !account) {
    await services.lockout.check(network);
    await services.lockout.recordFailure(network);
    throw new ApiError('forbidden', AUTH_DENIED);
  }
  await touchToken(db, hash, services.now());
  return { account: refuseSuspended(account), name: owner.name };
}
