// The backup settings' values (CONTRACT §15): a retention, "7 daily, 4 weekly"; the schedule's
// cron fields, when they fire and when they last fired; and berth.toml's backup keys.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/index.ts';
import { cronMatcher, lastFiring } from '../../src/core/cron.ts';
import { parseRetention, retentionFlags, retentionText } from '../../src/core/retention.ts';
import { tempDir } from '../helpers.ts';

describe('backup settings', () => {
  it('reads a retention as counts of periods, and refuses anything else with the reason', () => {
    assert.deepEqual(parseRetention('7 daily, 4 weekly'), { daily: 7, weekly: 4 });
    assert.deepEqual(parseRetention('  3 last ,12 monthly'), { last: 3, monthly: 12 });
    assert.deepEqual(retentionFlags({ daily: 7, weekly: 4 }), ['--keep-daily', '7', '--keep-weekly', '4']);
    assert.equal(retentionText({ daily: 7, weekly: 4 }), '7 daily, 4 weekly');
    for (const [text, reason] of [
      ['7 days', /"7 days" is not a count and a period/],
      ['daily 7', /is not a count and a period/],
      ['7 daily, 2 daily', /daily is given twice/],
      ['0 daily', /keeps nothing/],
      ['7 daily; rm -rf /', /is not a count and a period/],
      ['', /is not a count and a period/],
    ] as const)
      assert.match(String(parseRetention(text)), reason, text);
  });

  it('fires a schedule in the minutes its fields name, in the server’s time zone', () => {
    const at = (y: number, mo: number, d: number, h: number, mi: number) => new Date(y, mo - 1, d, h, mi);
    const daily = cronMatcher('0 3 * * *');
    assert.equal(daily(at(2026, 11, 26, 3, 0)), true);
    assert.equal(daily(at(2026, 11, 26, 3, 1)), false);
    assert.equal(daily(at(2026, 11, 26, 4, 0)), false);
    // A restricted day of month or day of week: either matches, as cron has it.
    const either = cronMatcher('30 2 1 * sun');
    assert.equal(either(at(2026, 11, 1, 2, 30)), true); // the 1st, a Sunday too
    assert.equal(either(at(2026, 11, 8, 2, 30)), true); // a Sunday
    assert.equal(either(at(2026, 12, 1, 2, 30)), true); // the 1st, a Tuesday
    assert.equal(either(at(2026, 12, 2, 2, 30)), false);
    const steps = cronMatcher('*/15 1-2 * * 1-5');
    assert.equal(steps(at(2026, 11, 26, 1, 45)), true); // a Thursday
    assert.equal(steps(at(2026, 11, 28, 1, 45)), false); // a Saturday
    assert.deepEqual(lastFiring('0 3 * * *', at(2026, 11, 26, 2, 59)), at(2026, 11, 25, 3, 0));
    assert.deepEqual(lastFiring('0 3 * * *', at(2026, 11, 26, 3, 0)), at(2026, 11, 26, 3, 0));
    assert.equal(lastFiring('0 3 29 2 *', at(2026, 11, 26, 3, 0)), null);
  });

  it('takes the backup keys from berth.toml, and stops at a value it cannot use', () => {
    const dataDir = tempDir('berth-backup-config-');
    try {
      assert.deepEqual(loadConfig({ dataDir }).backup, {
        repository: join(dataDir, 'backups'),
        schedule: '0 3 * * *',
        keep: { daily: 7, weekly: 4 },
        keepRemovedDays: 30,
        environmentFile: null,
      });
      writeFileSync(
        join(dataDir, 'berth.toml'),
        [
          'backup_repository = "sftp:backup@store.example:/berth"',
          'backup_schedule = "15 1 * * MON"',
          'backup_keep = "14 daily, 8 weekly, 6 monthly"',
          'backup_keep_removed = 90',
        ].join('\n'),
      );
      assert.deepEqual(loadConfig({ dataDir }).backup, {
        repository: 'sftp:backup@store.example:/berth',
        schedule: '15 1 * * mon',
        keep: { daily: 14, weekly: 8, monthly: 6 },
        keepRemovedDays: 90,
        environmentFile: null,
      });
      for (const [line, reason] of [
        ['backup_schedule = "@daily"', /backup_schedule must be five cron fields/],
        ['backup_schedule = "0 25 * * *"', /backup_schedule must be five cron fields: .*hour/],
        ['backup_keep = "forever"', /backup_keep "forever" is not a count and a period/],
        ['backup_keep_removed = -1', /backup_keep_removed/],
        ['backup_repository = "relative/path"', /backup_repository must be a directory or a restic location/],
      ] as const) {
        writeFileSync(join(dataDir, 'berth.toml'), `${line}\n`);
        assert.throws(
          () => loadConfig({ dataDir }),
          (error: Error) => {
            assert.ok(error instanceof ConfigError);
            assert.match(error.message, reason);
            return true;
          },
        );
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
