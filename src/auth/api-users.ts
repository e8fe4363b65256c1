// The API Manager: creating, listing and changing API accounts. Shared by the CLI and the portal;
// a change takes effect on a running server from its next request on (authenticate.ts reads the
// store on every request). Every change is audited, refusals included.
import { randomUUID } from 'node:crypto';
import { ApiError, invalid } from '../core/errors.ts';
import { parseAddressRange, parseApiUserName, parsePassword, parseUser } from '../core/values.ts';
import { type Actor, audited } from '../operations/audited.ts';
import { findAccount } from '../store/accounts.ts';
import {
  type ApiUser,
  deleteApiUser as deleteRow,
  findApiUser,
  insertApiUser,
  listApiUsers,
  updateApiUser,
} from '../store/api-users.ts';
import { uniqueViolation } from '../store/errors.ts';
import type { Db } from '../store/schema.ts';
import type { CryptPool } from './crypt-pool.ts';

export interface ApiUserSpec {
  name: string;
  password: string;
  /** Empty: open access (any IP). */
  allowedIps: string[];
  reseller: string | null;
}

function parseAllowedIps(ips: readonly string[]): string[] {
  return [...new Set(ips.map((ip) => parseAddressRange('allowed_ips', ip)))];
}

/** The reseller account an API account is bound to: its name and its identity as a reseller. */
async function resellerToBind(db: Db, name: string): Promise<{ name: string; id: string }> {
  const reseller = parseUser('reseller', name);
  const account = await findAccount(db, reseller);
  if (!account?.reseller) throw invalid('reseller', `${reseller} is not a reseller account`);
  return { name: reseller, id: account.reseller.id };
}

/**
 * Every refusal of a new API account's values at once, for a form that shows them all
 * (createApiUser stops at the first).
 */
export async function newApiUserErrors(db: Db, spec: ApiUserSpec): Promise<ApiError[]> {
  const checks = [
    async () => {
      const name = parseApiUserName('name', spec.name);
      if (await findApiUser(db, name)) throw invalid('name', `an API user named ${name} already exists`);
    },
    async () => parsePassword('password', spec.password),
    async () => parseAllowedIps(spec.allowedIps),
    async () => (spec.reseller ? resellerToBind(db, spec.reseller) : null),
  ];
  const errors: ApiError[] = [];
  for (const check of checks) {
    try {
      await check();
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      errors.push(error);
    }
  }
  return errors;
}

export function createApiUser(db: Db, crypt: CryptPool, spec: ApiUserSpec, actor: Actor): Promise<ApiUser> {
  return audited(db, actor, 'api-user create', spec.name, () => insertNew(db, crypt, spec));
}

async function insertNew(db: Db, crypt: CryptPool, spec: ApiUserSpec): Promise<ApiUser> {
  const name = parseApiUserName('name', spec.name);
  const password = parsePassword('password', spec.password);
  const allowedIps = parseAllowedIps(spec.allowedIps);
  const reseller =
    spec.reseller !== null && spec.reseller !== '' ? await resellerToBind(db, spec.reseller) : null;
  if (await findApiUser(db, name)) throw invalid('name', `an API user named ${name} already exists`);
  const now = new Date();
  const user: ApiUser = {
    id: randomUUID(),
    name,
    passwordHash: await crypt.hash(password),
    access: allowedIps.length > 0 ? 'restricted' : 'open',
    allowedIps,
    reseller: reseller?.name ?? null,
    resellerId: reseller?.id ?? null,
    createdAt: now,
    updatedAt: now,
    lastUsedAt: null,
  };
  try {
    await insertApiUser(db, user);
  } catch (error) {
    if (uniqueViolation(error)) throw invalid('name', `an API user named ${name} already exists`);
    throw error;
  }
  return user;
}

function notFound(name: string) {
  return invalid('name', `no API user named ${name} exists`);
}

export function resetApiUserPassword(
  db: Db,
  crypt: CryptPool,
  name: string,
  password: string,
  actor: Actor,
): Promise<void> {
  return audited(db, actor, 'api-user reset-password', name, async () => {
    const hash = await crypt.hash(parsePassword('password', password));
    if (!(await updateApiUser(db, name, { passwordHash: hash }))) throw notFound(name);
  });
}

/** Empty `allowedIps`: open access. */
export function setApiUserAccess(
  db: Db,
  name: string,
  allowedIps: readonly string[],
  actor: Actor,
): Promise<void> {
  return audited(db, actor, 'api-user set-access', name, async () => {
    const ips = parseAllowedIps(allowedIps);
    const access = ips.length > 0 ? 'restricted' : 'open';
    if (!(await updateApiUser(db, name, { access, allowedIps: ips }))) throw notFound(name);
  });
}

/**
 * Binds the API account to a reseller (or, with null, unbinds it): also how the administrator
 * mends a binding whose reseller was removed or lost its reseller status.
 */
export function bindApiUser(db: Db, name: string, reseller: string | null, actor: Actor): Promise<void> {
  return audited(db, actor, 'api-user set-reseller', name, async () => {
    const bound = reseller === null || reseller === '' ? null : await resellerToBind(db, reseller);
    if (!(await updateApiUser(db, name, { reseller: bound }))) throw notFound(name);
  });
}

export function deleteApiUser(db: Db, name: string, actor: Actor): Promise<void> {
  return audited(db, actor, 'api-user delete', name, async () => {
    if (!(await deleteRow(db, name))) throw notFound(name);
  });
}

export { listApiUsers };
