// restore_backup (CONTRACT §14, §15): the holder puts back its files (all, or one `path`), its
// mail (all, or one mailbox by `email`) or one of its databases (`database`, which it has now) from
// one of its snapshots; it answers once the data is in place.
import { invalid } from '../core/errors.ts';
import { objectsOf } from '../store/objects.ts';
import {
  backupKinds,
  findSnapshot,
  heldSnapshots,
  requireBackups,
  restoredMessage,
  restoreInto,
} from './backup-common.ts';
import { holderAccount } from './common.ts';
import { findDatabase } from './database-objects.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

export const restoreBackup = defineOperation({
  name: 'restore_backup',
  summary: "Restore the account's files, a mailbox or a database from one of its backups.",
  changesState: true,
  audiences: ['holder'],
  event: 'backup.restored',
  params: {
    snapshot: required(backupKinds.snapshot, 'The snapshot, as list_backups gives it'),
    what: required(backupKinds.holderWhat, 'What to restore'),
    path: optional(backupKinds.homePath, 'With files: one path below the home (else every file)'),
    email: optional(kinds.email, 'With mail: one mailbox (else all the mail)'),
    database: optional(
      kinds.databaseName,
      'With database: the database to restore (its suffix alone, or its whole name)',
    ),
  },
  example: { snapshot: '81498b8c', what: 'files', path: 'public_html/index.php' },
  result: results.message,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const account = await holderAccount(ctx.db, ctx.principal);
    requireBackups(ctx.services, account.server);
    const objects = await objectsOf(ctx.db, account.user);
    if (input.path && input.what !== 'files') throw invalid('path', 'a path is restored with what=files');
    if (input.email && input.what !== 'mail') throw invalid('email', 'a mailbox is restored with what=mail');
    if (input.database && input.what !== 'databases')
      throw invalid('database', 'a database is restored with what=database');
    if (
      input.email &&
      !objects.mailboxes.some((m) => m.email === input.email) &&
      input.email !== `${account.user}@${account.domain}`
    )
      throw invalid('email', 'it is none of the account’s mailboxes');
    // One database at a time, the account's own, named as the database operations name it.
    if (input.what === 'databases' && !input.database)
      throw invalid('database', 'name the database to restore');
    const database = input.database && findDatabase(account, objects, 'database', input.database).name;
    const current = account.server ?? ctx.services.config.nodeName;
    const snapshot = findSnapshot(
      await heldSnapshots(ctx.services, ctx.db, account.user, current),
      input.snapshot,
    );
    const request = {
      what: input.what,
      ...(input.path && { path: input.path }),
      ...(input.email && { email: input.email }),
      ...(database && { database }),
    };
    await restoreInto(ctx.services, account, objects, snapshot, request);
    await ctx.recordSuccess(ctx.db);
    const message = restoredMessage(account.user, snapshot.id, request);
    return { data: message, info: message };
  },
});
