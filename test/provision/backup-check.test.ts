// restic's check of the repository (CONTRACT §15): it runs after each scheduled round's retention,
// its time and result are kept (root's, 0600), and `berth doctor` and /metrics show a repository
// never checked once backups exist, a failed check, and a check older than the schedule allows.
import assert from 'node:assert/strict';
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkRepository, lastBackupCheck } from '../../src/operations/backup-check.ts';
import { applyRetention, runDueBackups } from '../../src/operations/backup-jobs.ts';
import { inspect } from '../../src/operations/maintenance.ts';
import { createAccount, forSuite } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

describe('the backup repository’s check', () => {
  const h = forSuite(linuxSetup);
  const repositoryLines = async () =>
    (await inspect(h.services)).filter((l) => l.startsWith('backup repository'));
  const metrics = () =>
    h.services.metrics.render(h.services.store.db, undefined, lastBackupCheck(h.services.config.dataDir));

  it('is not asked for before any backup; once one exists, doctor says it never ran', async () => {
    assert.deepEqual(await repositoryLines(), []);
    await createAccount(h, 'cora', { domain: 'cora.example' });
    assert.equal((await h.call('backupacct', { user: 'cora' })).statusCode, 200);
    assert.equal(await runDueBackups(h.services), 1);
    assert.deepEqual(await repositoryLines(), [
      'backup repository: never checked (restic check runs after each scheduled round)',
    ]);
    assert.match(await metrics(), /^berth_backup_check_ok 0$/m);
  });

  it('a passing check is kept with its time, root’s alone, and silences doctor', async () => {
    const before = Date.now();
    await applyRetention(h.services);
    const file = join(h.services.config.dataDir, 'backup-check.json');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const check = lastBackupCheck(h.services.config.dataDir);
    assert.equal(check?.ok, true);
    assert.ok(check!.time.getTime() >= before - 1000);
    assert.deepEqual(await repositoryLines(), []);
    const text = await metrics();
    assert.match(text, /^berth_backup_check_ok 1$/m);
    assert.match(
      text,
      new RegExp(`^berth_backup_last_check_seconds ${Math.floor(check!.time.getTime() / 1000)}$`, 'm'),
    );
  });

  it('a check older than the last scheduled round is stale', async () => {
    const { services } = h;
    const realNow = services.now;
    services.now = () => new Date(Date.now() + 3 * 24 * 60 * 60_000);
    try {
      const [line, ...rest] = await repositoryLines();
      assert.match(
        line ?? '',
        /^backup repository: last checked .*, none since the round of .* \(backup_schedule /,
      );
      assert.deepEqual(rest, []);
    } finally {
      services.now = realNow;
    }
  });

  it('a damaged repository fails the check: doctor shows restic’s words, metrics a 0', async () => {
    const data = join(h.services.config.backup.repository, 'data');
    const packs = readdirSync(data).flatMap((dir) =>
      readdirSync(join(data, dir)).map((f) => join(data, dir, f)),
    );
    assert.ok(packs.length > 0);
    // Every pack cut short: what the index says of them no longer holds.
    for (const pack of packs) truncateSync(pack, 100);
    const failures = (await metrics()).match(/^berth_backup_failures_total (\d+)$/m)![1];
    // The check alone: a round's retention would stop at the damaged packs first (and still check).
    assert.equal(await checkRepository(h.services), false);
    const check = lastBackupCheck(h.services.config.dataDir);
    assert.equal(check?.ok, false);
    const [line] = await repositoryLines();
    assert.match(line ?? '', /^backup repository: restic check failed at .*: .*restic failed/);
    const text = await metrics();
    assert.match(text, /^berth_backup_check_ok 0$/m);
    assert.equal(text.match(/^berth_backup_failures_total (\d+)$/m)![1], String(Number(failures) + 1));
  });
});
