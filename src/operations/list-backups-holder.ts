// list_backups (CONTRACT §14, §15): the holder's own snapshots, as listbackups gives them.
import { heldSnapshots, listedSnapshots, requireBackups } from './backup-common.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listBackupsOfHolder = defineOperation({
  name: 'list_backups',
  summary: "The account's backups (snapshots), oldest first.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.snapshots,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    requireBackups(ctx.services, account.server);
    const current = account.server ?? ctx.services.config.nodeName;
    const held = await heldSnapshots(ctx.services, ctx.db, account.user, current);
    const data = await listedSnapshots(ctx.services, held);
    return { data, info: `${data.snapshots.length} backup(s) of ${account.user}` };
  },
});
