// listbackups (CONTRACT §15): the account's snapshots, oldest first, each with its size in MB and the
// server whose repository holds it; also those of an account removed since, while they are kept.
import { apiError } from '../core/errors.ts';
import { findAccount } from '../store/accounts.ts';
import { heldSnapshots, listedSnapshots, removedAccountInScope, requireBackups } from './backup-common.ts';
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
    // A removed account's snapshots are kept (backup_keep_removed) where they were taken, and an
    // account that moved has those of its old servers: every holding server's are listed.
    const existing = (await findAccount(ctx.db, input.user))
      ? await targetAccount(ctx.db, ctx.principal, input.user)
      : null;
    if (!ctx.services.fleet.backupsOn(null)) {
      if (!existing) throw apiError('account_not_found', { user: input.user }, 'user');
      requireBackups(ctx.services);
    }
    const current = existing ? (existing.server ?? ctx.services.config.nodeName) : null;
    const held = await heldSnapshots(ctx.services, ctx.db, input.user, current);
    if (!existing) await removedAccountInScope(ctx.principal, ctx.services, held, input.user);
    const data = await listedSnapshots(ctx.services, held);
    return { data, info: `${data.snapshots.length} backup(s) of ${input.user}` };
  },
});
