// What runs beside the API: comparing the store with the system (`berth doctor`, and at start), and
// refreshing the accounts' usage (`berth usage refresh`, and every 15 minutes while serving).

import { sql } from 'kysely';
import { backupEnvironmentProblem } from '../config/backup-environment.ts';
import { PublicSuffixes, publicSuffixesAt } from '../core/domain-claims.ts';
import type { Services } from '../services.ts';
import { type Account, findAccount, listAccounts } from '../store/accounts.ts';
import { ownerOfDomain } from '../store/domains.ts';
import { objectsByUser, objectsOf } from '../store/objects.ts';
import { heldBy, restoreAccounts } from '../store/pending.ts';
import { placeAccounts, unplacedAccounts } from '../store/servers.ts';
import { accountsWithoutUid, raiseUidMark, recordUid } from '../store/uids.ts';
import { backupWarnings } from './backup-jobs.ts';

export const USAGE_REFRESH_MS = 15 * 60_000;

/**
 * Every difference between the store and the system (`berth doctor`, and serve at start): what the
 * store itself reports wrong, calls a crash left in the journal, and the driver's own comparison
 * (the record driver keeps no system state: it has none).
 */
export async function inspect(services: Services): Promise<string[]> {
  const differences: string[] = [];
  if (services.store.dialect === 'sqlite') {
    const { rows } = await sql<{ quick_check: string }>`PRAGMA quick_check`.execute(services.store.db);
    for (const row of rows) if (row.quick_check !== 'ok') differences.push(`store: ${row.quick_check}`);
  }
  const suffixes = publicSuffixesAt(services.config.publicSuffixList);
  if (!(suffixes instanceof PublicSuffixes))
    differences.push(
      `public suffix list: ${suffixes.problem} (Debian's package publicsuffix, or public_suffix_list): createacct and add_domain cannot refuse public suffixes such as co.uk`,
    );
  for (const { users } of await heldBy(services.store.db, services.config.nodeName))
    differences.push(
      `${users.join(', ')}: a change was interrupted while its system steps ran; serve puts the rows back when it starts`,
    );
  for (const { entry } of services.journal.pending())
    differences.push(
      `${entry.user}: "${entry.operation}" was interrupted (${entry.startedAt}); serve finishes it when it starts`,
    );
  if (services.driver.backups) {
    const problem = backupEnvironmentProblem(services.config);
    if (problem) differences.push(problem);
    differences.push(...(await backupWarnings(services, await ownAccounts(services))));
  }
  // Only a driver with something to compare loads the accounts (start-up stays fast).
  differences.push(
    ...(await services.driver.inspect(
      () => ownAccounts(services),
      () => objectsByUser(services.store.db),
    )),
  );
  return differences;
}

/**
 * The accounts this server's system holds: doctor, usage, certificates and recovery look after
 * these only, the fleet's other servers after theirs (CONTRACT §12).
 */
export async function ownAccounts(services: Services): Promise<Account[]> {
  const self = services.config.nodeName;
  return (await listAccounts(services.store.db, null)).filter(
    (account) => account.server === null || account.server === self,
  );
}

/** Every account's domains, by user: one query however many accounts there are. */
async function domainsByUser(db: Services['store']['db']): Promise<Map<string, string[]>> {
  const byUser = new Map<string, string[]>();
  for (const { user, domain } of await db.selectFrom('domains').select(['user', 'domain']).execute())
    byUser.set(user, [...(byUser.get(user) ?? []), domain]);
  return byUser;
}

/**
 * Measures every account and stores its usage; returns how many were updated. A disk space that is
 * only a floor (its count stopped short) is stored, and logged.
 */
export async function refreshUsage(services: Services): Promise<number> {
  const { db } = services.store;
  const accounts = await ownAccounts(services);
  const measured = await services.driver.measureUsage(accounts, await domainsByUser(db));
  let updated = 0;
  for (const account of accounts) {
    const usage = measured.get(account.user);
    if (!usage) continue;
    if (usage.partial)
      services.log.warn(
        { user: account.user },
        `disk usage of ${account.user} is at least ${usage.quota} MB: ${usage.partial}`,
      );
    await db
      .updateTable('accounts')
      .set({ quota_usage: usage.quota, bandwidth_usage: usage.bandwidth })
      .where('user', '=', account.user)
      .execute();
    updated++;
  }
  return updated;
}

/**
 * Finishes what calls interrupted by a crash left: the rows of changes whose system steps were
 * running here are put back as they were; then, from the journal, an account the store has here is
 * repaired to match it, and one it does not have, or has on another server (moved away), loses
 * every trace here. Returns what was done.
 */
export async function recoverInterruptedCalls(services: Services): Promise<string[]> {
  const done: string[] = [];
  for (const { txn, users } of await heldBy(services.store.db, services.config.nodeName)) {
    await restoreAccounts(services.store.db, txn);
    done.push(`${users.join(', ')}: rows put back as they were before an interrupted change`);
  }
  for (const { id, entry } of services.journal.pending()) {
    // Steps run for another server's transaction: what the store says once it has ended is right.
    if (entry.transaction) await services.fleet.waitForEnd(entry.transaction);
    const account = await findAccount(services.store.db, entry.user);
    const here = account && (account.server === null || account.server === services.config.nodeName);
    // The call's other domains that are no account's now (an add undone), or, for an account gone
    // from here, its own too: their traces go.
    const free = async (domain: string, also: string | null) => {
      const owner = await ownerOfDomain(services.store.db, domain);
      return owner === undefined || owner === also;
    };
    const strays = async (also: string | null) => {
      const found: string[] = [];
      for (const domain of entry.domains ?? []) if (await free(domain, also)) found.push(domain);
      return found;
    };
    if (account && here && account.domain === entry.domain) {
      const objects = await objectsOf(services.store.db, account.user);
      await services.driver.reconcile(account, objects, await strays(null));
      done.push(`${entry.user}: repaired to match the store after an interrupted "${entry.operation}"`);
    } else {
      await services.driver.purge(entry, await strays(entry.user));
      done.push(`${entry.user}: traces of an interrupted "${entry.operation}" removed`);
    }
    services.journal.end(id);
  }
  return done;
}

/**
 * Gives this server the accounts no server holds yet (made before fleets) whose system user it
 * has; on the record driver, which keeps no system, all of them.
 */
export async function claimUnplacedAccounts(services: Services): Promise<number> {
  const { db } = services.store;
  const held: string[] = [];
  for (const { user } of await unplacedAccounts(db)) {
    if (services.config.driver === 'record' || (await services.driver.nameTaken(user))) held.push(user);
  }
  await placeAccounts(db, held, services.config.nodeName);
  return held.length;
}

/**
 * Keeps the fleet's uids unique (CONTRACT §10), when a server starts: raises the mark above every
 * id in the accounts' range that this server's system already has (a user made by hand, an
 * account made before uids were kept), and records the uid of each such account held here.
 */
export async function settleUids(services: Services): Promise<void> {
  const found = services.driver.systemIds?.();
  if (!found) return;
  const { db } = services.store;
  const { min, max } = services.config.uids;
  const inRange = found.ids.filter((id) => id >= min && id <= max);
  if (inRange.length > 0) await raiseUidMark(db, Math.max(...inRange));
  for (const user of await accountsWithoutUid(db, services.config.nodeName)) {
    const uid = found.users.get(user);
    if (uid !== undefined) await recordUid(db, user, uid);
  }
}
