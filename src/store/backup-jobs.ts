// Backup runs in the store (CONTRACT §15, STYLE 12): queued by a call or the schedule, taken by the
// account's own server, retried with backoff. Rows become BackupJob objects here and nowhere else.

import { newCronJobId } from './cron-jobs.ts';
import type { BackupJobTable, Db } from './schema.ts';

export interface BackupJob {
  id: string;
  user: string;
  server: string;
  state: BackupJobTable['state'];
  reason: string;
  attempts: number;
  nextAttempt: Date;
  createdAt: Date;
  finishedAt: Date | null;
  snapshot: string | null;
  error: string | null;
}

function toJob(row: BackupJobTable): BackupJob {
  return {
    id: row.id,
    user: row.user,
    server: row.server,
    state: row.state,
    reason: row.reason,
    attempts: Number(row.attempts),
    nextAttempt: new Date(row.next_attempt),
    createdAt: new Date(row.created_at),
    finishedAt: row.finished_at === null ? null : new Date(row.finished_at),
    snapshot: row.snapshot,
    error: row.error,
  };
}

/** The account's job that waits or runs, if any. */
export async function activeJob(db: Db, user: string): Promise<BackupJob | undefined> {
  const row = await db
    .selectFrom('backup_jobs')
    .selectAll()
    .where('active_user', '=', user)
    .executeTakeFirst();
  return row && toJob(row);
}

/**
 * Queues a backup of the account on its server, unless one already waits or runs: that one is
 * answered instead (the unique index decides between two concurrent calls).
 */
export async function queueBackup(
  db: Db,
  user: string,
  server: string,
  reason: string,
  now: Date,
): Promise<BackupJob> {
  const existing = await activeJob(db, user);
  if (existing) return existing;
  const row: BackupJobTable = {
    id: newCronJobId(),
    user,
    server,
    active_user: user,
    state: 'queued',
    reason,
    attempts: 0,
    next_attempt: now.toISOString(),
    created_at: now.toISOString(),
    finished_at: null,
    snapshot: null,
    error: null,
  };
  try {
    await db.insertInto('backup_jobs').values(row).execute();
  } catch (error) {
    const other = await activeJob(db, user);
    if (other) return other;
    throw error;
  }
  return toJob(row);
}

/** The jobs of this server due now, oldest first. */
export async function dueJobs(db: Db, server: string, now: Date): Promise<BackupJob[]> {
  const rows = await db
    .selectFrom('backup_jobs')
    .selectAll()
    .where('server', '=', server)
    .where('state', 'in', ['queued', 'running'])
    .where('next_attempt', '<=', now.toISOString())
    .orderBy('next_attempt')
    .execute();
  return rows.map(toJob);
}

/** Marks a job running (a server that stops while it runs takes it again when it starts). */
export async function startJob(db: Db, id: string): Promise<void> {
  await db.updateTable('backup_jobs').set({ state: 'running' }).where('id', '=', id).execute();
}

export async function finishJob(db: Db, id: string, snapshot: string, now: Date): Promise<void> {
  await db
    .updateTable('backup_jobs')
    .set({ state: 'done', active_user: null, snapshot, finished_at: now.toISOString(), error: null })
    .where('id', '=', id)
    .execute();
}

/** A failed attempt: tried again at `retryAt`, or, with none, failed for good. */
export async function failJob(
  db: Db,
  id: string,
  error: string,
  attempts: number,
  retryAt: Date | null,
  now: Date,
) {
  await db
    .updateTable('backup_jobs')
    .set(
      retryAt
        ? { state: 'queued', attempts, error, next_attempt: retryAt.toISOString() }
        : { state: 'failed', attempts, error, active_user: null, finished_at: now.toISOString() },
    )
    .where('id', '=', id)
    .execute();
}

export async function findJob(db: Db, id: string): Promise<BackupJob | undefined> {
  const row = await db.selectFrom('backup_jobs').selectAll().where('id', '=', id).executeTakeFirst();
  return row && toJob(row);
}

/** Where each account's backups stand: its last good one, and the failures since. */
export interface BackupStatus {
  user: string;
  lastSuccess: Date | null;
  lastSnapshot: string | null;
  /** Attempts that failed since the last good backup. */
  failuresSince: number;
  lastError: string | null;
  /** A job waits or runs. */
  active: BackupJob['state'] | null;
}

/** Every account's status that has ever had a job, by user. */
export async function backupStatuses(db: Db): Promise<Map<string, BackupStatus>> {
  const rows = await db.selectFrom('backup_jobs').selectAll().orderBy('created_at').execute();
  const statuses = new Map<string, BackupStatus>();
  for (const job of rows.map(toJob)) {
    const status = statuses.get(job.user) ?? {
      user: job.user,
      lastSuccess: null,
      lastSnapshot: null,
      failuresSince: 0,
      lastError: null,
      active: null,
    };
    if (job.state === 'done') {
      status.lastSuccess = job.finishedAt;
      status.lastSnapshot = job.snapshot;
      status.failuresSince = 0;
      status.lastError = null;
    } else {
      status.failuresSince += job.attempts;
      if (job.error) status.lastError = job.error;
      if (job.state === 'queued' || job.state === 'running') status.active = job.state;
    }
    statuses.set(job.user, status);
  }
  return statuses;
}
