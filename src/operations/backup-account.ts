// backupacct (CONTRACT §15): queues a backup of the account on its own server and answers at once
// with the job; a job that already waits or runs for the account is answered instead.
import { queueBackup } from '../store/backup-jobs.ts';
import { requireBackups } from './backup-common.ts';
import { changeState, targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const backupAccount = defineOperation({
  name: 'backupacct',
  summary: 'Start a backup of an account; answers at once with its job.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'alice' },
  result: results.backupJob,
  errors: ['account_not_found'],
  async run(ctx, input) {
    requireBackups(ctx.services);
    const job = await changeState(ctx, async (db) => {
      const account = await targetAccount(db, ctx.principal, input.user);
      const server = account.server ?? ctx.services.config.nodeName;
      return queueBackup(db, account.user, server, 'call', ctx.services.now());
    });
    return { data: { job: job.id }, info: `Backup of ${input.user} queued as job ${job.id}` };
  },
});
