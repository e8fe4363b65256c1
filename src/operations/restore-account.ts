// restoreacct (CONTRACT §15): puts back an account's files, mail or databases (or one path) from
// one of its snapshots, answering once the data is in place. An account removed since is made
// again as the snapshot had it, from the record and objects the snapshot keeps (password hashes
// included: its login, its mailboxes' logins), as an account arriving from another server is made;
// then everything it had is restored into it, on the server whose repository holds the snapshot. A
// reseller reaches a removed account's snapshots only when the snapshot names it as the owner. The
// snapshot may be held by another server than the account's own (taken before a move): the
// account's server restores from what that one gives of it (fleet/backups.ts).
import { apiError, invalid } from '../core/errors.ts';
import type { RestoreRequest } from '../provision/driver.ts';
import { type Account, findAccount, serializeAccountCreation, toAccount } from '../store/accounts.ts';
import { findOverlappingDomain } from '../store/domains.ts';
import { insertObjectRows } from '../store/object-rows.ts';
import { type AccountObjects, fromObjectRows, objectsOf } from '../store/objects.ts';
import { noteAccount } from '../store/pending.ts';
import { type Db, OBJECT_TABLES } from '../store/schema.ts';
import {
  backupKinds,
  findSnapshot,
  type HeldSnapshot,
  heldSnapshots,
  parseRecord,
  type RecordFile,
  removedAccountInScope,
  requireBackups,
  restoredMessage,
  restoreInto,
} from './backup-common.ts';
import { changeState, targetAccount } from './common.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

/** Makes the removed account again, in the store and on `server`'s system. */
async function recreate(
  ctx: Parameters<typeof restoreAccount.run>[0],
  record: RecordFile,
  server: string,
): Promise<{ account: Account; objects: AccountObjects }> {
  const { password_hash: storeHash, ...row } = record.account;
  const passwordHash = record.system_password_hash ?? storeHash;
  if (!passwordHash) throw invalid('snapshot', 'it keeps no password hash for the account');
  const account = toAccount({ ...row, server });
  const objects = fromObjectRows(record.objects);
  if (!objects) throw invalid('snapshot', "its record of the account's objects is not one Berth can read");
  await changeState(ctx, async (db: Db, system) => {
    await serializeAccountCreation(db);
    if (await findAccount(db, account.user)) throw apiError('account_exists', { user: account.user }, 'user');
    for (const domain of new Set([account.domain, ...objects.domains.map((d) => d.domain)]))
      if (await findOverlappingDomain(db, domain, account.user))
        throw apiError('domain_in_use', { domain }, 'snapshot');
    const pkg = await db
      .selectFrom('packages')
      .select('name')
      .where('name', '=', account.package)
      .executeTakeFirst();
    if (!pkg)
      throw invalid('snapshot', `the account's package ${account.package} no longer exists: add it first`);
    await noteAccount(db, account.user);
    await db
      .insertInto('accounts')
      .values({ ...record.account, server })
      .execute();
    // Rows of the very table they were read from.
    for (const table of OBJECT_TABLES)
      await insertObjectRows(db, table, (record.objects[table] ?? []) as never[]);
    await system({ kind: 'recreate', account, objects, passwordHash });
  });
  return { account, objects };
}

export const restoreAccount = defineOperation({
  name: 'restoreacct',
  summary: 'Restore an account (or its files, mail, databases or one path) from one of its backups.',
  changesState: true,
  audiences: ['admin', 'reseller'],
  event: 'backup.restored',
  params: {
    user: required(kinds.user, 'Account user name (a removed account is made again)'),
    snapshot: required(backupKinds.snapshot, 'The snapshot, as listbackups gives it'),
    what: optional(backupKinds.what, 'What to restore; all when omitted'),
    path: optional(backupKinds.homePath, 'One path below the home to restore (with what=files or all)'),
  },
  example: { user: 'alice', snapshot: '81498b8c', what: 'files', path: 'public_html' },
  result: results.message,
  errors: ['account_not_found', 'account_exists', 'domain_in_use', 'object_not_found'],
  async run(ctx, input) {
    const what = input.what ?? 'all';
    let request: RestoreRequest = {
      what: input.path ? 'files' : what,
      ...(input.path && { path: input.path }),
    };
    if (input.path && what !== 'files' && what !== 'all')
      throw invalid('path', 'a path is restored with what=files');
    const existing = await findAccount(ctx.db, input.user);
    let account: Account;
    let objects: AccountObjects;
    let snapshot: HeldSnapshot;
    if (existing) {
      account = await targetAccount(ctx.db, ctx.principal, input.user);
      requireBackups(ctx.services, account.server);
      const current = account.server ?? ctx.services.config.nodeName;
      snapshot = findSnapshot(
        await heldSnapshots(ctx.services, ctx.db, account.user, current),
        input.snapshot,
      );
      objects = await objectsOf(ctx.db, account.user);
    } else {
      // Removed: its snapshots say whose it was; outside the caller's scope it does not exist.
      if (!ctx.services.fleet.backupsOn(null))
        throw apiError('account_not_found', { user: input.user }, 'user');
      const held = await heldSnapshots(ctx.services, ctx.db, input.user, null);
      await removedAccountInScope(ctx.principal, ctx.services, held, input.user);
      snapshot = findSnapshot(held, input.snapshot);
      const backups = requireBackups(ctx.services, snapshot.server);
      const record = parseRecord(await backups.record(input.user, snapshot.id), input.user);
      // Made again on the server whose repository holds the snapshot: the restore reads it there.
      ({ account, objects } = await recreate(ctx, record, snapshot.server));
      request = { what: 'all' };
    }
    await restoreInto(ctx.services, account, objects, snapshot, request);
    if (existing) await ctx.recordSuccess(ctx.db);
    const message = restoredMessage(account.user, snapshot.id, request);
    return { data: message, info: message };
  },
});
