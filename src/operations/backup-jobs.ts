// Backup runs as jobs (CONTRACT §15, STYLE 12): backupacct, `berth backup run` and the schedule
// (`backup_schedule`) queue them in the store; the account's own server takes them one at a time,
// never inside a call. A failed attempt is logged, counted in the metrics and tried again later
// (1 minute, 5, 30, 2 hours), the job failing for good after its last attempt; `berth doctor` and
// the portal show where each account stands. After each scheduled round, retention (`backup_keep`,
// `backup_keep_removed`) forgets what is no longer kept, and restic checks the repository.
import { cronMatcher, lastFiring } from '../core/cron.ts';
import type { Backups } from '../provision/driver.ts';
import type { Services } from '../services.ts';
import { type Account, findAccount, listAccounts } from '../store/accounts.ts';
import { noteBackupHolder } from '../store/backup-holders.ts';
import {
  type BackupJob,
  backupStatuses,
  dueJobs,
  failJob,
  finishJob,
  queueBackup,
  startJob,
} from '../store/backup-jobs.ts';
import { objectsOf } from '../store/objects.ts';
import { type Db, OBJECT_TABLES } from '../store/schema.ts';
import { backupCheckWarnings, checkRepository } from './backup-check.ts';

const MINUTE = 60_000;
export const BACKUP_RETRIES = [MINUTE, 5 * MINUTE, 30 * MINUTE, 120 * MINUTE];
const WORK_EVERY_MS = 2_000;

/**
 * The account's record and objects as a snapshot keeps them: its rows, password hashes included
 * (the store's, the mailboxes', the FTP accounts', the database users' with their grants, and the system's login
 * `system_password_hash`).
 */
export async function accountRecordFile(
  db: Db,
  user: string,
  server: string,
  now: Date,
  systemPasswordHash: string | null,
): Promise<string> {
  const account = await db
    .selectFrom('accounts')
    .selectAll()
    .where('user', '=', user)
    .executeTakeFirstOrThrow();
  const objects: Record<string, unknown[]> = {};
  // Every kind of object, so that a removed account comes back with all of them.
  for (const table of OBJECT_TABLES)
    objects[table] = await db.selectFrom(table).selectAll().where('user', '=', user).execute();
  return `${JSON.stringify(
    {
      format: 1,
      server,
      taken: now.toISOString(),
      account,
      objects,
      system_password_hash: systemPasswordHash,
    },
    null,
    1,
  )}\n`;
}

/** The accounts this server's system holds (maintenance.ts's ownAccounts, which imports this). */
async function accountsHere(services: Services): Promise<Account[]> {
  const self = services.config.nodeName;
  return (await listAccounts(services.store.db, null)).filter((a) => a.server === null || a.server === self);
}

/** How long after the schedule fires a backup may take before `berth doctor` calls it stale. */
const STALE_GRACE_MS = 6 * 60 * MINUTE;

/**
 * What `berth doctor` says about this server's backups: the repository's last check (failed, or
 * none since the last round), an account whose last attempts failed, and one with no good backup
 * since the schedule last fired (allowing STALE_GRACE_MS for the round).
 */
export async function backupWarnings(services: Services, accounts: readonly Account[]): Promise<string[]> {
  if (!backupsOf(services)) return [];
  const statuses = await backupStatuses(services.store.db);
  const due = lastFiring(
    services.config.backup.schedule,
    new Date(services.now().getTime() - STALE_GRACE_MS),
  );
  const warnings: string[] = backupCheckWarnings(
    services,
    accounts.some((a) => statuses.get(a.user)?.lastSuccess),
  );
  for (const account of accounts) {
    const status = statuses.get(account.user);
    if (status && status.failuresSince > 0)
      warnings.push(
        `${account.user}: backup failing (${status.failuresSince} failed attempt(s) since the last good one): ${status.lastError ?? ''}`,
      );
    else if (due && account.setupAt < due && (!status?.lastSuccess || status.lastSuccess < due))
      warnings.push(
        `${account.user}: no good backup since ${due.toISOString().slice(0, 16).replace('T', ' ')} (backup_schedule ${services.config.backup.schedule})`,
      );
  }
  return warnings;
}

/** The driver's backups, or the reason there are none. */
export function backupsOf(services: Services): Backups | null {
  return services.driver.backups ?? null;
}

/** Queues a backup of one account on its server (at most one waits or runs per account). */
export function queueAccountBackup(services: Services, account: Account, reason: string): Promise<BackupJob> {
  return queueBackup(
    services.store.db,
    account.user,
    account.server ?? services.config.nodeName,
    reason,
    services.now(),
  );
}

/** Runs one job's attempt: the snapshot, or the failure and its next attempt. */
export async function runBackupJob(services: Services, job: BackupJob): Promise<void> {
  const { db } = services.store;
  const backups = backupsOf(services);
  const account = await findAccount(db, job.user);
  const fail = async (message: string, retry: boolean) => {
    services.metrics.backupFailure();
    const attempts = job.attempts + 1;
    const wait = retry ? BACKUP_RETRIES[attempts - 1] : undefined;
    const now = services.now();
    await failJob(
      db,
      job.id,
      message.slice(0, 1000),
      attempts,
      wait ? new Date(now.getTime() + wait) : null,
      now,
    );
    services.log.warn(
      { user: job.user, job: job.id, attempts, retry: wait !== undefined, error: message },
      wait ? 'backup failed; will retry' : 'backup failed',
    );
  };
  if (!backups) return fail('this server keeps no backups (the record driver)', false);
  if (!account || (account.server !== null && account.server !== services.config.nodeName))
    return fail('the account is not on this server any more', false);
  await startJob(db, job.id);
  try {
    const record = await accountRecordFile(
      db,
      account.user,
      services.config.nodeName,
      services.now(),
      services.driver.systemPasswordHash?.(account.user) ?? null,
    );
    const summary = await backups.backup(account, await objectsOf(db, account.user), record);
    await finishJob(db, job.id, summary.snapshot, services.now());
    await noteBackupHolder(db, account.user, services.config.nodeName, services.now());
    services.log.info(
      { user: account.user, job: job.id, snapshot: summary.snapshot, added: summary.bytesAdded },
      'backup made',
    );
  } catch (error) {
    await fail((error as Error).message.replace(/\s+/g, ' '), true);
  }
}

/** Runs every job of this server that is due now, one after the other; returns how many. */
export async function runDueBackups(services: Services): Promise<number> {
  const jobs = await dueJobs(services.store.db, services.config.nodeName, services.now());
  for (const job of jobs) await runBackupJob(services, job);
  return jobs.length;
}

/**
 * Forgets, in this server's repository, what retention no longer keeps; then, whatever that gave,
 * checks the repository (backup-check.ts), so that damage is found before a restore needs it.
 */
export async function applyRetention(services: Services): Promise<void> {
  const backups = backupsOf(services);
  if (!backups) return;
  try {
    // The fleet's accounts, not this server's alone: a shared repository holds every server's.
    const users = new Set((await listAccounts(services.store.db, null)).map((a) => a.user));
    await backups.applyRetention(users, services.now());
  } finally {
    await checkRepository(services);
  }
}

export interface BackupWorker {
  close(): Promise<void>;
}

/**
 * While serving: queues every account of this server when the schedule fires, takes the jobs due,
 * and applies retention once a scheduled round is done.
 */
export function startBackupWorker(services: Services): BackupWorker {
  const matches = cronMatcher(services.config.backup.schedule);
  let lastMinute = Math.floor(services.now().getTime() / MINUTE);
  let retentionDue = false;
  let running: Promise<void> | null = null;
  let closed = false;
  const work = async () => {
    const minute = Math.floor(services.now().getTime() / MINUTE);
    let fired = false;
    for (let m = lastMinute + 1; m <= minute; m++) if (matches(new Date(m * MINUTE))) fired = true;
    lastMinute = minute;
    if (fired) {
      for (const account of await accountsHere(services))
        await queueAccountBackup(services, account, 'schedule');
      retentionDue = true;
    }
    const ran = await runDueBackups(services);
    if (ran === 0 && retentionDue && !closed) {
      retentionDue = false;
      await applyRetention(services);
      services.log.info({}, 'backup retention applied');
    }
  };
  const timer = setInterval(() => {
    if (running || closed) return;
    running = work()
      .catch((error: unknown) =>
        services.log.warn({ error: (error as Error).message }, 'backup worker failed'),
      )
      .finally(() => {
        running = null;
      });
  }, WORK_EVERY_MS);
  timer.unref();
  return {
    async close() {
      closed = true;
      clearInterval(timer);
      await running;
    },
  };
}
