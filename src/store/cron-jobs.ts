// The cron jobs of accounts in the store (CONTRACT §14). Rows become CronJob objects here and
// nowhere else.
import { randomBytes } from 'node:crypto';
import { noteAccount } from './pending.ts';
import type { CronJobRow, Db } from './schema.ts';

export interface CronJob {
  /** Lower-case base32 (`a`–`z`, `2`–`7`), CRON_JOB_ID_LENGTH characters. */
  id: string;
  /** Five cron fields, as the holder gave them (validated by core/cron.ts). */
  schedule: string;
  /** One line, run by /bin/sh in the account's jail. */
  command: string;
  createdAt: Date;
}

export const CRON_JOB_ID_LENGTH = 10;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** A new job's id: 50 random bits. */
export function newCronJobId(): string {
  return [...randomBytes(CRON_JOB_ID_LENGTH)].map((byte) => BASE32[byte % 32]).join('');
}

export function toCronJob(row: CronJobRow): CronJob {
  return { id: row.id, schedule: row.schedule, command: row.command, createdAt: new Date(row.created_at) };
}

export function toCronJobRow(user: string, job: CronJob): CronJobRow {
  return {
    id: job.id,
    user,
    schedule: job.schedule,
    command: job.command,
    created_at: job.createdAt.toISOString(),
  };
}

/** The account's cron jobs, oldest first. */
export async function cronJobsOf(db: Db, user: string): Promise<CronJob[]> {
  const rows = await db.selectFrom('cron_jobs').selectAll().where('user', '=', user).execute();
  return rows
    .sort((a, b) =>
      a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1,
    )
    .map(toCronJob);
}

export async function insertCronJob(db: Db, user: string, job: CronJob): Promise<void> {
  await noteAccount(db, user);
  await db.insertInto('cron_jobs').values(toCronJobRow(user, job)).execute();
}

export async function deleteCronJob(db: Db, user: string, id: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('cron_jobs').where('user', '=', user).where('id', '=', id).execute();
}

/** Removes every cron job of the account. */
export async function deleteCronJobsOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('cron_jobs').where('user', '=', user).execute();
}
