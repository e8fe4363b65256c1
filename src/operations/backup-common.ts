// What the backup operations share (CONTRACT §15): their values (a snapshot id, what to restore, a
// path below the home), finding an account's snapshot, and the restore itself, which answers only
// once the data is in place.
import { apiError, invalid } from '../core/errors.ts';
import type { Backups, RestoreRequest, RestoreWhat } from '../provision/driver.ts';
import { StepRefused } from '../provision/driver.ts';
import type { Services } from '../services.ts';
import type { Account } from '../store/accounts.ts';
import { backupHoldersOf } from '../store/backup-holders.ts';
import type { AccountObjects } from '../store/objects.ts';
import type { AccountRow, Db } from '../store/schema.ts';
import type { ValueKind } from './operation.ts';
import { type Principal, resellerOf } from './principal.ts';

const kind = <T>(
  type: string,
  rule: string,
  schema: Record<string, unknown>,
  parse: (param: string, raw: string) => T,
): ValueKind<T> => ({ type, rule, schema, parse: (param, raw) => parse(param, raw) });

export const backupKinds = {
  snapshot: kind(
    'string',
    'a snapshot id as listbackups gives it, or its first 8 or more characters',
    { type: 'string', pattern: '^[0-9a-f]{8,64}$' },
    (param, raw) => {
      if (!/^[0-9a-f]{8,64}$/.test(raw))
        throw invalid(param, 'a snapshot id is 8 to 64 characters of 0-9 and a-f');
      return raw;
    },
  ),
  what: kind(
    'all|files|mail|databases',
    'all, files, mail or databases',
    { type: 'string', enum: ['all', 'files', 'mail', 'databases'] },
    (param, raw): RestoreWhat => {
      const found = (['all', 'files', 'mail', 'databases'] as const).find((w) => w === raw);
      if (!found) throw invalid(param, 'it is all, files, mail or databases');
      return found;
    },
  ),
  /** The holder's: one thing at a time (`database`, singular, as CONTRACT §15 names it). */
  holderWhat: kind(
    'files|mail|database',
    'files, mail or database',
    { type: 'string', enum: ['files', 'mail', 'database'] },
    (param, raw): RestoreWhat => {
      if (raw === 'files' || raw === 'mail') return raw;
      if (raw === 'database') return 'databases';
      throw invalid(param, 'it is files, mail or database');
    },
  ),
  homePath: kind(
    'string',
    'a path relative to the home: names separated by /, none empty, . or ..; at most 1024 characters',
    { type: 'string', minLength: 1, maxLength: 1024 },
    (param, raw): string[] => {
      if (raw.length > 1024) throw invalid(param, 'it is longer than 1024 characters');
      if (raw.startsWith('/')) throw invalid(param, 'it is relative to the home, not absolute');
      const components = raw.replace(/\/+$/, '').split('/');
      if (components.some((c) => c === '' || c === '.' || c === '..'))
        throw invalid(param, 'its names may not be empty, . or ..');
      return components;
    },
  ),
};

/**
 * The backups of the server that holds the account (`server`; null or omitted: this one, which
 * also keeps a removed account's), or 400 when this server keeps none.
 */
export function requireBackups(services: Services, server: string | null = null): Backups {
  const backups = services.fleet.backupsOn(server);
  if (!backups) throw invalid('user', 'this server keeps no backups (it runs the record driver)');
  return backups;
}

/** One of a user's snapshots, with the server whose repository holds it. */
export interface HeldSnapshot {
  id: string;
  time: string;
  server: string;
}

/**
 * Every snapshot of the user, oldest first, in the repositories of the servers that hold some:
 * the account's own server (`current`, null for a removed account), then each that ever took one
 * (backup_holders: before a move, before a removal), then, for a removed account, this one. A
 * snapshot two servers list (one repository shared by the fleet) is the first's.
 */
export async function heldSnapshots(
  services: Services,
  db: Db,
  user: string,
  current: string | null,
): Promise<HeldSnapshot[]> {
  const servers = [
    ...new Set([
      ...(current ? [current] : []),
      ...(await backupHoldersOf(db, user)),
      ...(current ? [] : [services.config.nodeName]),
    ]),
  ];
  const found = new Map<string, HeldSnapshot>();
  for (const server of servers) {
    const backups = services.fleet.backupsOn(server);
    if (!backups) continue;
    for (const { id, time } of await backups.snapshots(user))
      if (!found.has(id)) found.set(id, { id, time, server });
  }
  return [...found.values()].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}

/** The snapshot that `given` names (a whole id or its start), or 400 object_not_found. */
export function findSnapshot(held: readonly HeldSnapshot[], given: string): HeldSnapshot {
  const found = held.filter((s) => s.id.startsWith(given));
  if (found.length !== 1) throw apiError('object_not_found', { kind: 'snapshot', name: given }, 'snapshot');
  return found[0]!;
}

/** The snapshots as listbackups answers them, oldest first, sizes in MB, each with its server. */
export async function listedSnapshots(services: Services, held: readonly HeldSnapshot[]) {
  const sized = [];
  for (const { id, time, server } of held) {
    const size = await requireBackups(services, server).size(id);
    sized.push({ id, time, size: Math.round(size / 10_485.76) / 100, server });
  }
  return { snapshots: sized };
}

/**
 * Restores into an existing account, on its own server, from the snapshot wherever it is held; a
 * link planted on the way is 400 invalid_parameter.
 */
export async function restoreInto(
  services: Services,
  account: Account,
  objects: AccountObjects,
  snapshot: HeldSnapshot,
  request: RestoreRequest,
): Promise<void> {
  if (request.path && request.what !== 'files' && request.what !== 'all')
    throw invalid('path', 'a path is restored with what=files');
  try {
    await services.fleet.restoreFrom(snapshot.server, account, objects, snapshot.id, request);
  } catch (error) {
    if (error instanceof StepRefused) throw invalid(error.param, error.message);
    throw error;
  }
}

export function restoredMessage(user: string, snapshot: string, request: RestoreRequest): string {
  const what = request.path ? request.path.join('/') : (request.email ?? request.database ?? request.what);
  return `Restored ${what} of ${user} from snapshot ${snapshot.slice(0, 8)}`;
}

/** The record a removed account's snapshot keeps, as far as restoreacct reads it. */
export interface RecordFile {
  account: AccountRow & { password_hash: string | null };
  objects: Record<string, unknown[]>;
  /** The system login's hash (the store's own is another, of the same password). */
  system_password_hash?: string | null;
}

export function parseRecord(text: string, user: string): RecordFile {
  const parsed = JSON.parse(text) as Partial<RecordFile> & { format?: number };
  if (parsed.format !== 1 || parsed.account?.user !== user || typeof parsed.objects !== 'object')
    throw new Error(`the snapshot's record of ${user} is not one Berth can read`);
  return parsed as RecordFile;
}

/**
 * A removed account's user name when its snapshots are the principal's to see: any for the
 * administrator, a reseller's when the newest snapshot names it as the owner; else, as for any
 * account outside the scope, 400 account_not_found.
 */
export async function removedAccountInScope(
  principal: Principal,
  services: Services,
  held: readonly HeldSnapshot[],
  user: string,
): Promise<string> {
  const notFound = () => apiError('account_not_found', { user }, 'user');
  const newest = held.at(-1);
  if (!newest) throw notFound();
  const reseller = resellerOf(principal);
  if (reseller === null) return user;
  const record = parseRecord(await requireBackups(services, newest.server).record(user, newest.id), user);
  if (record.account.owner !== reseller.user) throw notFound();
  return user;
}
