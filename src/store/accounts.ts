// Hosting accounts in the store. Rows become Account objects here and nowhere else.
import { SqliteAdapter, sql } from 'kysely';
import type { Limit } from '../core/values.ts';
import { deleteCronJobsOf } from './cron-jobs.ts';
import { deleteDatabasesOf } from './databases.ts';
import { deleteDomainsOf, insertDomain, mainDomain, renameMainDomain } from './domains.ts';
import { deleteFtpAccountsOf } from './ftp-accounts.ts';
import { deleteTokensOf } from './holder-credentials.ts';
import { deleteMailOf } from './mailboxes.ts';
import { deleteMailingListsOf } from './mailing-lists.ts';
import { heldAddresses, heldRowsOwnedBy, noteAccount, refuseHeld } from './pending.ts';
import type { AccountRow, Db } from './schema.ts';

export const LIMIT_NAMES = [
  'addondomains',
  'parkeddomains',
  'subdomains',
  'email_accounts',
  'ftp',
  'sql',
  'maillist',
  'bandwidth',
  'quota',
  'mailquota',
] as const;
export type LimitName = (typeof LIMIT_NAMES)[number];
export type Limits = Record<LimitName, Limit>;

export interface Suspension {
  reason: string;
  at: Date;
  /** `root` when the administrator suspended, else the reseller that did. */
  by: string;
}

export interface ResellerState {
  /** New each time the account becomes a reseller: what API accounts are bound to. */
  id: string;
  selfown: boolean;
  alpha: boolean;
  limit: Limit;
  bandwidth: Limit;
  quota: Limit;
  /** The owner the account had before it came to own itself. */
  previousOwner: string | null;
}

export interface Account {
  user: string;
  domain: string;
  contactEmail: string;
  package: string;
  feature: string;
  owner: string;
  homedir: string;
  language: string;
  theme: string;
  mailserver: 'local' | 'remote';
  dkim: boolean;
  spf: boolean;
  useRegistrarNs: boolean;
  nameservers: string[];
  setupAt: Date;
  dedicatedIpv4: string | null;
  dedicatedIpv6: string | null;
  shellEnabled: boolean;
  reseller: ResellerState | null;
  limits: Limits;
  suspension: Suspension | null;
  usage: { quota: number; bandwidth: number };
  /** The server of the fleet whose system holds it (CONTRACT §12). */
  server: string | null;
  /** Its system user's uid, given to no other account ever; null for one made before uids were kept. */
  uid: number | null;
}

/**
 * Whose accounts a call may see: everything (null), the accounts one reseller owns, or exactly one
 * account (its holder's).
 */
export type Scope = { owner: string } | { user: string } | null;

/** Whether the scope reaches the account. */
export function inScope(account: Pick<Account, 'user' | 'owner'>, scope: Scope): boolean {
  if (scope === null) return true;
  return 'user' in scope ? account.user === scope.user : account.owner === scope.owner;
}

const bit = (value: boolean): number => (value ? 1 : 0);

/** The limit columns of an account or package row: NULL is unlimited. */
export function limitsOf(row: Record<LimitName, number | string | null>): Limits {
  const limits = {} as Limits;
  for (const name of LIMIT_NAMES) limits[name] = row[name] === null ? null : Number(row[name]);
  return limits;
}

export function toAccount(row: AccountRow): Account {
  return {
    user: row.user,
    domain: row.domain,
    contactEmail: row.contact_email,
    package: row.package,
    feature: row.feature,
    owner: row.owner,
    homedir: row.homedir,
    language: row.language,
    theme: row.theme,
    mailserver: row.mailserver === 'remote' ? 'remote' : 'local',
    dkim: row.dkim === 1,
    spf: row.spf === 1,
    useRegistrarNs: row.use_registrar_ns === 1,
    nameservers: JSON.parse(row.nameservers) as string[],
    setupAt: new Date(row.setup_at),
    dedicatedIpv4: row.dedicated_ipv4,
    dedicatedIpv6: row.dedicated_ipv6,
    shellEnabled: row.shell_enabled === 1,
    reseller:
      row.reseller === 1
        ? {
            id: row.reseller_id ?? '',
            selfown: row.selfown === 1,
            alpha: row.alpha === 1,
            limit: row.reseller_limit,
            bandwidth: row.reseller_bandwidth,
            quota: row.reseller_quota,
            previousOwner: row.previous_owner,
          }
        : null,
    limits: limitsOf(row),
    suspension:
      row.suspended === 1
        ? {
            reason: row.suspend_reason ?? '',
            at: new Date(row.suspended_at ?? 0),
            by: row.suspended_by ?? 'root',
          }
        : null,
    usage: { quota: Number(row.quota_usage), bandwidth: Number(row.bandwidth_usage) },
    server: row.server,
    uid: row.uid === null ? null : Number(row.uid),
  };
}

function resellerColumns(reseller: ResellerState | null) {
  return {
    reseller: bit(reseller !== null),
    reseller_id: reseller?.id ?? null,
    selfown: bit(reseller?.selfown ?? false),
    alpha: bit(reseller?.alpha ?? false),
    reseller_limit: reseller?.limit ?? null,
    reseller_bandwidth: reseller?.bandwidth ?? null,
    reseller_quota: reseller?.quota ?? null,
    previous_owner: reseller?.previousOwner ?? null,
  };
}

export function toRow(account: Account): AccountRow {
  return {
    user: account.user,
    domain: account.domain,
    contact_email: account.contactEmail,
    package: account.package,
    feature: account.feature,
    owner: account.owner,
    homedir: account.homedir,
    language: account.language,
    theme: account.theme,
    mailserver: account.mailserver,
    dkim: bit(account.dkim),
    spf: bit(account.spf),
    use_registrar_ns: bit(account.useRegistrarNs),
    nameservers: JSON.stringify(account.nameservers),
    setup_at: account.setupAt.toISOString(),
    dedicated_ipv4: account.dedicatedIpv4,
    dedicated_ipv6: account.dedicatedIpv6,
    shell_enabled: bit(account.shellEnabled),
    ...resellerColumns(account.reseller),
    ...account.limits,
    suspended: bit(account.suspension !== null),
    suspend_reason: account.suspension?.reason ?? null,
    suspended_at: account.suspension?.at.toISOString() ?? null,
    suspended_by: account.suspension?.by ?? null,
    quota_usage: account.usage.quota,
    bandwidth_usage: account.usage.bandwidth,
    server: account.server,
    uid: account.uid,
  };
}

/**
 * Whether reading a row for a change must lock it. SQLite transactions hold the whole database's
 * write lock from their start (BEGIN IMMEDIATE); PostgreSQL locks rows, so a read-modify-write of
 * an account locks its row until the commit.
 */
function locksRows(db: Db): boolean {
  return !(db.getExecutor().adapter instanceof SqliteAdapter);
}

export async function findAccount(
  db: Db,
  user: string,
  options: { lock?: boolean } = {},
): Promise<Account | undefined> {
  let query = db.selectFrom('accounts').selectAll().where('user', '=', user);
  if (options.lock && locksRows(db)) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  // Checked once the row lock is taken: a change that held it until its commit is seen here.
  if (options.lock) await refuseHeld(db, [user]);
  return row && toAccount(row);
}

/** The account, if the scope reaches it: outside the scope it does not exist. */
export async function findAccountInScope(
  db: Db,
  user: string,
  scope: Scope,
  options: { lock?: boolean } = {},
): Promise<Account | undefined> {
  const account = await findAccount(db, user, options);
  return account && inScope(account, scope) ? account : undefined;
}

/** A query of accounts narrowed to those the scope reaches. */
function narrowed<Q extends { where: (column: 'owner' | 'user', op: '=', value: string) => Q }>(
  query: Q,
  scope: Scope,
): Q {
  if (scope === null) return query;
  return 'user' in scope ? query.where('user', '=', scope.user) : query.where('owner', '=', scope.owner);
}

export async function listAccounts(db: Db, scope: Scope): Promise<Account[]> {
  const query = narrowed(db.selectFrom('accounts').selectAll().orderBy('user'), scope);
  return (await query.execute()).map(toAccount);
}

/** One page of the accounts in user-name order, after `afterUser` (keyset paging). */
export async function listAccountsPage(
  db: Db,
  scope: Scope,
  afterUser: string,
  limit: number,
): Promise<Account[]> {
  const query = narrowed(
    db.selectFrom('accounts').selectAll().where('user', '>', afterUser).orderBy('user').limit(limit),
    scope,
  );
  return (await query.execute()).map(toAccount);
}

export async function listSuspendedAccounts(db: Db, scope: Scope): Promise<Account[]> {
  const query = narrowed(
    db.selectFrom('accounts').selectAll().where('suspended', '=', 1).orderBy('user'),
    scope,
  );
  return (await query.execute()).map(toAccount);
}

export async function countAccounts(db: Db, scope: Scope, resellersOnly = false): Promise<number> {
  let query = narrowed(
    db.selectFrom('accounts').select((eb) => eb.fn.countAll<number | string>().as('n')),
    scope,
  );
  if (resellersOnly) query = query.where('reseller', '=', 1);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.n);
}

/** What the accounts a reseller owns, other than itself, add up to, for its limits. */
export async function ownedTotals(
  db: Db,
  owner: string,
  except: string | null,
): Promise<{ accounts: number; quota: number; bandwidth: number }> {
  let query = db
    .selectFrom('accounts')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('accounts'),
      eb.fn.sum<number | string | null>('quota').as('quota'),
      eb.fn.sum<number | string | null>('bandwidth').as('bandwidth'),
    ])
    .where('owner', '=', owner)
    .where('user', '!=', owner);
  if (except !== null) query = query.where('user', '!=', except);
  const row = await query.executeTakeFirstOrThrow();
  const totals = {
    accounts: Number(row.accounts),
    quota: Number(row.quota ?? 0),
    bandwidth: Number(row.bandwidth ?? 0),
  };
  // A change still running counts at the larger of its two sides: its failure brings the old back.
  for (const before of await heldRowsOwnedBy(db, owner)) {
    if (before.user === except) continue;
    const now = await db
      .selectFrom('accounts')
      .select(['owner', 'quota', 'bandwidth'])
      .where('user', '=', before.user)
      .executeTakeFirst();
    const counted = now?.owner === owner ? now : { quota: 0, bandwidth: 0 };
    if (counted !== now) totals.accounts++;
    totals.quota += Math.max(Number(before.quota ?? 0) - Number(counted.quota ?? 0), 0);
    totals.bandwidth += Math.max(Number(before.bandwidth ?? 0) - Number(counted.bandwidth ?? 0), 0);
  }
  return totals;
}

/**
 * Makes concurrent createacct calls take turns on the rules that span accounts (overlapping
 * domains, the resellers' share of the address pool), where the store does not already: SQLite
 * write transactions are serial; on PostgreSQL a transaction-scoped advisory lock does it.
 */
export async function serializeAccountCreation(db: Db): Promise<void> {
  if (!locksRows(db)) return;
  await sql`select pg_advisory_xact_lock(${CREATION_LOCK})`.execute(db);
}

/** An arbitrary constant naming the createacct lock among PostgreSQL's advisory locks. */
const CREATION_LOCK = 0x62657274;

export async function insertAccount(db: Db, account: Account): Promise<void> {
  await noteAccount(db, account.user);
  await db.insertInto('accounts').values(toRow(account)).execute();
  // The tokens of an account removed before are useless (no account, no login) but kept, so that
  // a removal undone keeps them; a new account of the same name is another holder's.
  await deleteTokensOf(db, account.user);
  await insertDomain(db, account.user, mainDomain(account.domain, account.setupAt));
}

/** Writes every field of the account back. */
export async function saveAccount(db: Db, account: Account): Promise<void> {
  const { user, ...rest } = toRow(account);
  await noteAccount(db, user);
  await db.updateTable('accounts').set(rest).where('user', '=', user).execute();
  await renameMainDomain(db, user, account.domain);
}

export async function deleteAccount(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('accounts').where('user', '=', user).execute();
  await deleteDomainsOf(db, user);
  await deleteMailOf(db, user);
  await deleteCronJobsOf(db, user);
  await deleteMailingListsOf(db, user);
  await deleteDatabasesOf(db, user);
  await deleteFtpAccountsOf(db, user);
}

/** Passes every account `from` owns (but itself) to `to`. */
export async function transferOwnedAccounts(db: Db, from: string, to: string): Promise<void> {
  const owned = await db.selectFrom('accounts').select('user').where('owner', '=', from).execute();
  await refuseHeld(
    db,
    owned.map((row) => row.user),
  );
  await db
    .updateTable('accounts')
    .set({ owner: to })
    .where('owner', '=', from)
    .where('user', '!=', from)
    .execute();
}

export async function accountsOnPackage(
  db: Db,
  name: string,
  options: { lock?: boolean } = {},
): Promise<Account[]> {
  let query = db.selectFrom('accounts').selectAll().where('package', '=', name).orderBy('user');
  if (options.lock && locksRows(db)) query = query.forUpdate();
  const rows = await query.execute();
  if (options.lock)
    await refuseHeld(
      db,
      rows.map((row) => row.user),
    );
  return rows.map(toAccount);
}

/** The dedicated addresses of one family that accounts hold, each with the holder's owner. */
export async function dedicatedAddressesInUse(db: Db, family: 4 | 6): Promise<Map<string, string>> {
  const column = family === 4 ? 'dedicated_ipv4' : 'dedicated_ipv6';
  const rows = await db
    .selectFrom('accounts')
    .select([`${column} as address`, 'owner'])
    .where(column, 'is not', null)
    .execute();
  // An address a running removal frees is taken until it ends: a failure gives it back.
  return new Map([
    ...(await heldAddresses(db, family)),
    ...rows.map((row) => [String(row.address), row.owner] as const),
  ]);
}

export interface OwnedSummary {
  users: string[];
  quotaUsage: number;
  bandwidthUsage: number;
}

/** For each owner named, the accounts it owns and their summed usage. */
export async function ownedSummaries(db: Db, owners: readonly string[]): Promise<Map<string, OwnedSummary>> {
  const out = new Map<string, OwnedSummary>();
  if (owners.length === 0) return out;
  const rows = await db
    .selectFrom('accounts')
    .select(['user', 'owner', 'quota_usage', 'bandwidth_usage'])
    .where('owner', 'in', owners)
    .orderBy('user')
    .execute();
  for (const row of rows) {
    const summary = out.get(row.owner) ?? { users: [], quotaUsage: 0, bandwidthUsage: 0 };
    summary.users.push(row.user);
    summary.quotaUsage += Number(row.quota_usage);
    summary.bandwidthUsage += Number(row.bandwidth_usage);
    out.set(row.owner, summary);
  }
  return out;
}
