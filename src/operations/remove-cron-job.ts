// remove_cron_job (CONTRACT §14): the job no longer runs; a run already under way ends by itself
// (or with the account's processes, when it is suspended or removed).
import { apiError } from '../core/errors.ts';
import { deleteCronJob } from '../store/cron-jobs.ts';
import { cronJobObject } from './add-cron-job.ts';
import { changeObjects } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeCronJob = defineOperation({
  name: 'remove_cron_job',
  summary: 'Remove a cron job of the account.',
  changesState: true,
  audiences: ['holder'],
  event: 'cron_job.removed',
  params: {
    id: required(kinds.cronJobId, 'The id list_cron_jobs gives the job'),
  },
  example: { id: 'q3x7mbk2ad' },
  result: results.cronJob,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { id } = input;
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = before.cron_jobs.find((job) => job.id === id);
      if (!found) throw apiError('object_not_found', { kind: 'cron job', name: id }, 'id');
      await deleteCronJob(db, account.user, id);
      return found;
    });
    return { data: cronJobObject(removed), info: `Cron job ${id} removed` };
  },
});
