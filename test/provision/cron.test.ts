// The cron jobs of an account on the linux driver, in a throwaway system root (CONTRACT §14): each
// account's schedule in /etc/cron.d/berth-<user> runs Berth's runner with a job's id alone, its
// commands in a file of root's; suspension takes the schedule away and unsuspension puts it back;
// a failing step puts every file back as it was; removal removes both.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { inspect } from '../../src/operations/maintenance.ts';
import { cronJobsOf } from '../../src/store/cron-jobs.ts';
import { callForHolder, createAccount, forSuite } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

interface Job {
  id: string;
  schedule: string;
  command: string;
}

describe('cron jobs on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const mode = (path: string) => statSync(file(path)).mode & 0o7777;
  const add = async (schedule: string, command: string) =>
    (await callForHolder(h, 'vera', 'add_cron_job', { schedule, command })).data as Job;
  const remove = (id: string) => callForHolder(h, 'vera', 'remove_cron_job', { id });
  const schedule = 'etc/cron.d/berth-vera';
  const commands = 'etc/berth/cron/vera';

  it("writes Berth's runner, root's alone, a shell script that parses", async () => {
    await createAccount(h, 'vera', { domain: 'vera.example' });
    assert.equal(mode('etc/berth/cron-run'), 0o700);
    assert.equal(mode('etc/berth/cron'), 0o700);
    const runner = read('etc/berth/cron-run');
    assert.doesNotMatch(runner, /\{\{/);
    assert.match(runner, /^jobs=\/etc\/berth\/cron\/\$user$/m);
    assert.match(runner, /template=\/home\/\.berth-jail$/m);
    execFileSync('/bin/sh', ['-n', file('etc/berth/cron-run')]);
    // Every run is confined, in an IPC namespace of its own.
    assert.match(runner, /exec \/etc\/berth\/confine --run unshare --mount --ipc /);
    assert.equal(mode('etc/berth/confine'), 0o755);
    // No job, no files.
    assert.equal(existsSync(file(schedule)), false);
    assert.equal(existsSync(file(commands)), false);
  });

  it('add_cron_job schedules the runner with the job id, and keeps the command apart, root-only', async () => {
    const job = await add('*/5 0 * jan-mar MON', 'echo "$HOME" >> ran; rm -rf /');
    assert.equal(mode(schedule), 0o600);
    assert.equal(mode(commands), 0o600);
    const table = read(schedule);
    assert.match(table, /^MAILTO=""$/m);
    assert.ok(table.includes(`\n*/5 0 * 1-3 1 root /etc/berth/cron-run run vera ${job.id}\n`), table);
    // The command reaches no cron file: only the runner reads it.
    assert.doesNotMatch(table, /echo|rm -rf/);
    assert.equal(read(commands), `${job.id} echo "$HOME" >> ran; rm -rf /\n`);
    const second = await add('0 3 * * *', 'date');
    assert.equal(read(commands), `${job.id} echo "$HOME" >> ran; rm -rf /\n${second.id} date\n`);
    assert.equal(
      read(schedule)
        .split('\n')
        .filter((line) => line.includes(' root ')).length,
      2,
    );
  });

  it('a failing step puts both files back and adds no job', async () => {
    const before = [read(schedule), read(commands)];
    for (const step of ['cron jobs', 'cron schedule']) {
      h.failAt.step = step;
      try {
        const error = (await add('* * * * *', 'true').catch((e) => e)) as ApiError;
        assert.equal(error.code, 'provisioning_failed', step);
      } finally {
        h.failAt.step = null;
      }
      assert.deepEqual([read(schedule), read(commands)], before, step);
      assert.equal((await cronJobsOf(h.services.store.db, 'vera')).length, 2);
    }
  });

  it('suspension takes the schedule away and keeps the jobs; unsuspension schedules them again', async () => {
    assert.equal((await h.call('suspendacct', { user: 'vera', reason: 'unpaid' })).statusCode, 200);
    assert.equal(existsSync(file(schedule)), false);
    assert.equal(read(commands).split('\n').length, 3);
    // A job added while suspended waits too.
    const third = await add('30 * * * *', 'uptime');
    assert.equal(existsSync(file(schedule)), false);
    assert.ok(read(commands).includes(`${third.id} uptime\n`));
    assert.equal((await h.call('unsuspendacct', { user: 'vera' })).statusCode, 200);
    const lines = read(schedule)
      .split('\n')
      .filter((line) => line.includes(' root '));
    assert.equal(lines.length, 3);
    assert.ok(lines.includes(`30 * * * * root /etc/berth/cron-run run vera ${third.id}`));
  });

  it('berth doctor finds the schedule of a suspended account and a schedule of no account', async () => {
    assert.deepEqual(await inspect(h.services), []);
    await h.call('suspendacct', { user: 'vera', reason: 'unpaid' });
    const kept = read(commands);
    writeFileSync(file(schedule), '# left behind\n', { mode: 0o600 });
    writeFileSync(file('etc/cron.d/berth-ghost'), '# left behind\n', { mode: 0o600 });
    try {
      const found = await inspect(h.services);
      assert.ok(
        found.some((d) => /^vera: suspended, but its cron jobs are scheduled/.test(d)),
        found.join('\n'),
      );
      assert.ok(found.some((d) => /^ghost: cron file \/etc\/cron\.d\/berth-ghost with no account/.test(d)));
    } finally {
      rmSync(file('etc/cron.d/berth-ghost'));
    }
    // unsuspendacct writes the schedule whole again.
    await h.call('unsuspendacct', { user: 'vera' });
    assert.equal(read(commands), kept);
    assert.match(read(schedule), / root \/etc\/berth\/cron-run run vera /);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('remove_cron_job takes its line and command away; the last one takes both files', async () => {
    const jobs = await cronJobsOf(h.services.store.db, 'vera');
    await remove(jobs[0]!.id);
    assert.ok(!read(schedule).includes(jobs[0]!.id));
    assert.ok(!read(commands).includes(jobs[0]!.id));
    await remove(jobs[1]!.id);
    await remove(jobs[2]!.id);
    assert.equal(existsSync(file(schedule)), false);
    assert.equal(existsSync(file(commands)), false);
  });

  it('removeacct removes the files of its jobs', async () => {
    await add('* * * * *', 'true');
    assert.ok(existsSync(file(schedule)));
    assert.equal((await h.call('removeacct', { user: 'vera' })).statusCode, 200);
    assert.equal(existsSync(file(schedule)), false);
    assert.equal(existsSync(file(commands)), false);
    assert.deepEqual(await cronJobsOf(h.services.store.db, 'vera'), []);
  });
});
