// listbackups (CONTRACT §15): the account's snapshots, oldest first, each with its size in MB.
import { listedSnapshots, requireBackups } from './backup-common.ts';
import { targetAccount } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const listBackups = defineOperation({
  name: 'listbackups',
  summary: "An account's backups (snapshots), oldest first.",
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: { user: required(kinds.user, 'Account user name') },
  example: { user: 'alice' },
  result: results.snapshots,
  errors: ['account_not_found'],
  async run(ctx, input) {
    const backups = requireBackups(ctx.services);
    const account = await targetAccount(ctx.db, ctx.principal, input.user);
    const data = await listedSnapshots(backups, account.user);
    return { data, info: `${data.snapshots.length} backup(s) of ${account.user}` };
  },
});
