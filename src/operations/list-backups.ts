// listbackups (CONTRACT §15): the account's snapshots, oldest first, each with its size in MB; also
// those of an account removed since, while they are kept.
import { apiError } from '../core/errors.ts';
import { findAccount } from '../store/accounts.ts';
import { listedSnapshots, removedAccountInScope, requireBackups } from './backup-common.ts';
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
    // A removed account's snapshots are kept (backup_keep_removed) where they were taken: this
    // server's are listed, and restoreacct here makes it again.
    const existing = (await findAccount(ctx.db, input.user))
      ? await targetAccount(ctx.db, ctx.principal, input.user)
      : null;
    const kept = existing ? null : ctx.services.fleet.backupsOn(null);
    if (!existing && !kept) throw apiError('account_not_found', { user: input.user }, 'user');
    const backups = kept ?? requireBackups(ctx.services, existing!.server);
    const user = existing ? existing.user : await removedAccountInScope(ctx.principal, backups, input.user);
    const data = await listedSnapshots(backups, user);
    return { data, info: `${data.snapshots.length} backup(s) of ${user}` };
  },
});
