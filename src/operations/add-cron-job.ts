// add_cron_job (CONTRACT §14), an operation of the account holder's (or of an administrator or
// reseller acting for one): a command run on a schedule as the account's user, in its jail and its
// control group, never while it is suspended (docs/linux-driver.md, Cron jobs). The limit is the
// configuration's `cron_jobs`, the same for every account, taken inside the transaction that adds
// the job, so that concurrent adds never pass it.
import { apiError } from '../core/errors.ts';
import { type CronJob, insertCronJob, newCronJobId } from '../store/cron-jobs.ts';
import { changeObjects } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

/** A cron job as add_cron_job and list_cron_jobs answer it. */
export function cronJobObject(job: CronJob) {
  return { id: job.id, schedule: job.schedule, command: job.command, created: job.createdAt.toISOString() };
}

export const addCronJob = defineOperation({
  name: 'add_cron_job',
  summary: "Add a cron job: a command run on a schedule as the account's user, in its home.",
  changesState: true,
  audiences: ['holder'],
  event: 'cron_job.added',
  params: {
    schedule: required(kinds.cronSchedule, 'Five cron fields: minute hour day-of-month month day-of-week'),
    command: required(
      kinds.cronCommand,
      "The command, one line, run by /bin/sh as the account's user with the home as working directory; its output is discarded",
    ),
  },
  example: { schedule: '*/15 * * * *', command: 'php public_html/cron.php' },
  result: results.cronJob,
  errors: ['limit_reached'],
  async run(ctx, input) {
    const { schedule, command } = input;
    const limit = ctx.services.config.cronJobs;
    const added = await changeObjects(ctx, async (db, account, before) => {
      // Locked until the commit: the account's adds take turns on the limit.
      if (before.cron_jobs.length >= limit)
        throw apiError('limit_reached', { limit: 'cron_jobs', value: String(limit) });
      const made: CronJob = { id: newCronJobId(), schedule, command, createdAt: ctx.services.now() };
      await insertCronJob(db, account.user, made);
      return made;
    });
    return { data: cronJobObject(added), info: `Cron job ${added.id} added` };
  },
});
