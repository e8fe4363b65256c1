// remove_cron_job (CONTRACT §14): the job no longer runs; a run already under way ends by itself
// (or with the account's processes, when it is suspended or removed).
import { apiError } from '../core/errors.ts';
import { deleteCronJob } from '../store/cron-jobs.ts';
import { objectsOf } from '../store/objects.ts';
import { cronJobObject } from './add-cron-job.ts';
import { changeState, holderAccount } from './common.ts';
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
    const removed = await changeState(ctx, async (db, system) => {
      const account = await holderAccount(db, ctx.principal);
      const before = await objectsOf(db, account.user);
      const found = before.cron_jobs.find((job) => job.id === id);
      if (!found) throw apiError('object_not_found', { kind: 'cron job', name: id }, 'id');
      await deleteCronJob(db, account.user, id);
      await system({ kind: 'objects', account, before, objects: await objectsOf(db, account.user) });
      return found;
    });
    return { data: cronJobObject(removed), info: `Cron job ${id} removed` };
  },
});
