// How an account's holder proves who it is (CONTRACT §14): the account's user name and password
// (the panel's login, HTTP Basic on the customer API) or an API token the holder made (Bearer).
// Every server of a fleet checks against the store (docs/architecture.md); failures count toward
// the address's lock-out (§3) like the API accounts', through the same hashing pool. A suspended
// account's holder is told so only once the credentials are right: no one learns it without them.
import { ApiError, AUTH_DENIED, apiError } from '../core/errors.ts';
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
  await services.lockout.check(address);
  const account = USER.test(user) ? await findAccount(services.store.db, user) : undefined;
  const hash = account ? await storedHash(services, account) : undefined;
  const ok = await services.auth.attempt(address, `holder:${user}`, hash, password, account !== undefined);
  if (!ok || !account) throw new ApiError('forbidden', AUTH_DENIED);
  return refuseSuspended(account);
}

/** Whether `password` is the account's password now (the holder's own change_password asks it). */
export async function holderPasswordIs(
  services: Services,
  account: Account,
  password: string,
  address: string,
): Promise<boolean> {
  await services.lockout.check(address);
  const hash = await storedHash(services, account);
  return await services.auth.attempt(address, `holder:${account.user}`, hash, password, true);
}

/** The account an API token belongs to, with the token's name; failures count as a wrong password. */
export async function authenticateToken(
  services: Services,
  token: string,
  address: string,
): Promise<{ account: Account; name: string }> {
  await services.lockout.check(address);
  const { db } = services.store;
  const hash = tokenHash(token);
  const owner = looksLikeToken(token) ? await tokenOwner(db, hash) : undefined;
  const account = owner ? await findAccount(db, owner.user) : undefined;
  if (!owner || !account) {
    await services.lockout.recordFailure(address);
    throw new ApiError('forbidden', AUTH_DENIED);
  }
  await touchToken(db, hash, services.now());
  return { account: refuseSuspended(account), name: owner.name };
}
