// list_cron_jobs (CONTRACT §14): every cron job of the holder's account, oldest first, each as
// add_cron_job answers it.
import { cronJobsOf } from '../store/cron-jobs.ts';
import { cronJobObject } from './add-cron-job.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listCronJobs = defineOperation({
  name: 'list_cron_jobs',
  summary: "The account's cron jobs, oldest first.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.cronJobs,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const jobs = await cronJobsOf(ctx.db, account.user);
    return { data: jobs.map(cronJobObject), info: `${jobs.length} cron job(s) of ${account.user}` };
  },
});
