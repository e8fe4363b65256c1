// Attacks on what an account leaves behind and what it can read of its neighbours, in the sandbox
// (CONTRACT §10): a removed account's files in the directories all users may write, its crontab,
// the mail it queued and its SysV IPC objects reach no later account, whose uid is a new one; its
// PHP-FPM log and its btrfs qgroup go with it; a site's logs are its own;
// a password hash is on no command line another account can read while passwd runs.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { curl, ipcObjectsOf, type RunningSandbox, sandboxCall, startSandbox } from '../process.ts';

/** Python opening alice's POSIX message queue by its name (the flags and mode follow). */
const MQ_OPEN = 'import ctypes, os; ctypes.CDLL("librt.so.1").mq_open(b"/alice-queue",';

describe('what an account leaves and reads, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  const exec = (args: string[]) => running.exec(args);
  /** A shell command run as an account's user (as its PHP or cron job would), inside the sandbox. */
  const as = (user: string, script: string) => running.asUser(user, script);
  const create = async (user: string) => {
    const made = await sandboxCall(sandbox, 'createacct', {
      user,
      domain: `${user}.example`,
      email: `${user}@example.org`,
      package: 'default',
      password: `Pass-${user}-1234`,
    });
    assert.equal(made.status, 200, made.info);
  };
  const uidOf = async (user: string) => Number((await exec(['/usr/bin/id', '-u', '--', user])).stdout.trim());

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    await create('alice');
    await create('bob');
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('a site’s access and error logs are read by its account, not by the account next door, rotated too', async () => {
    const page = curl([
      '--resolve',
      `alice.example:${sandbox.http_port}:127.0.0.1`,
      `http://alice.example:${sandbox.http_port}/visitor-trail`,
    ]);
    assert.equal(page.ok, true);
    const log = '/var/log/nginx/alice.example/access.log';
    const mine = await as('alice', `cat ${log}`);
    assert.equal(mine.code, 0, mine.stderr);
    assert.match(mine.stdout, /visitor-trail/);
    for (const attempt of [`cat ${log}`, 'ls /var/log/nginx/alice.example']) {
      const theirs = await as('bob', attempt);
      assert.notEqual(theirs.code, 0, `bob: ${attempt}`);
      assert.doesNotMatch(theirs.stdout, /visitor-trail/);
    }
    // Rotation (Berth's logrotate file) keeps the owner and mode; nginx's own reopen too.
    const rotated = await exec([
      '/usr/sbin/logrotate',
      '-f',
      '-s',
      '/tmp/berth-logrotate.state',
      '/etc/logrotate.d/berth-sites',
    ]);
    assert.equal(rotated.code, 0, rotated.stderr);
    const master = (await exec(['/usr/bin/cat', '/run/nginx.pid'])).stdout.trim();
    assert.equal((await exec(['/usr/bin/kill', '-USR1', master])).code, 0);
    curl([
      '--resolve',
      `alice.example:${sandbox.http_port}:127.0.0.1`,
      `http://alice.example:${sandbox.http_port}/after-rotation`,
    ]);
    for (const file of [log, `${log}.1`]) {
      const stat = await exec(['/usr/bin/stat', '-c', '%a %G', '--', file]);
      assert.equal(stat.stdout.trim(), '640 alice', file);
      assert.notEqual((await as('bob', `cat ${file}`)).code, 0, `bob reads ${file}`);
      assert.equal((await as('alice', `cat ${file}`)).code, 0, `alice reads ${file}`);
    }
  });

  it('passwd puts the hash on no command line: a spy of the account next door reading every cmdline never sees one', async () => {
    // bob's spy reads every process's command line, over and over, while alice's password changes.
    const spy = as(
      'bob',
      'end=$(( $(date +%s) + 12 )); while [ "$(date +%s)" -lt "$end" ]; do cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\\0" " "; echo; done',
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (let i = 0; i < 8; i++) {
      const changed = await sandboxCall(sandbox, 'passwd', {
        user: 'alice',
        password: `Changed-pass-${i}-1234`,
      });
      assert.equal(changed.status, 200, changed.info);
    }
    const seen = await spy;
    assert.match(seen.stdout, /cat/, 'the spy saw command lines');
    const leaked = /\S*\$6\$\S*/.exec(seen.stdout)?.[0];
    assert.equal(leaked, undefined, 'a password hash was on a command line');
  });

  it('removeacct leaves none of the account’s files, crontab, queued mail, IPC objects, PHP log or qgroup; the next account gets a new uid', async () => {
    const aliceUid = await uidOf('alice');
    const qgroup = `1/${(await exec(['/usr/bin/stat', '-c', '%g', '/home/alice'])).stdout.trim()}`;
    const qgroups = async () =>
      (await exec(['/usr/bin/btrfs', 'qgroup', 'show', '-pre', '--raw', '/home'])).stdout
        .split('\n')
        .map((line) => line.trim().split(/\s+/)[0]);
    assert.ok((await qgroups()).includes(qgroup), `alice's qgroup ${qgroup}`);
    // Her master starts at her site's first PHP request, and logs from then on.
    const script = await as('alice', 'echo \'<?php echo "php-ran";\' > ~/public_html/ran.php');
    assert.equal(script.code, 0, script.stderr);
    const ran = curl([
      '-k',
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      `https://alice.example:${sandbox.https_port}/ran.php`,
    ]);
    assert.equal(ran.body, 'php-ran');
    const phpLog = '/var/log/berth/php-fpm/alice.log';
    assert.equal((await exec(['/usr/bin/test', '-f', phpLog])).code, 0, 'her PHP-FPM master logs there');
    const planted = await as(
      'alice',
      [
        'echo secret > /tmp/alice-tmp',
        'mkdir /tmp/alice-dir && echo secret > /tmp/alice-dir/inside',
        'echo secret > /var/tmp/alice-vartmp',
        'echo secret > /dev/shm/alice-shm',
        // As a process outside PHP's view would (PHP's own sees its tmp there).
        'echo secret > /run/lock/alice-lock',
        'echo secret > /var/lib/php/sessions/alice-fill',
        // SysV IPC objects outlive every process: a segment of 32 MiB filled stays in memory, and
        // mode 0666 lets any account use them.
        'ipcmk -M 33554432 -p 0666 >/dev/null && ipcmk -Q -p 0666 >/dev/null && ipcmk -S 4 -p 0666 >/dev/null',
        'php -r \'$s = shm_attach(0x42e7, 33554432, 0666); shm_put_var($s, 1, str_repeat("x", 30000000));\'',
        // A POSIX message queue needs no mount to be made, and outlives its maker as SysV's do.
        `python3 -c '${MQ_OPEN} os.O_CREAT | os.O_RDWR, 0o666, None) >= 0 or exit(1)'`,
        // Undeliverable for now (the sandbox has no outside DNS): it waits in the queue.
        'printf "Subject: later\\n\\nqueued\\n" | /usr/sbin/sendmail -f alice@alice.example -- someone@nowhere.invalid',
      ].join(' && '),
    );
    assert.equal(planted.code, 0, planted.stderr);
    // Her crontab as `crontab -` leaves it (the sandbox runs no cron daemon of its own): hers, 0600.
    const crontab = await exec([
      '/usr/bin/install',
      '-D',
      '-o',
      'alice',
      '-m',
      '0600',
      '/dev/null',
      '/var/spool/cron/crontabs/alice',
    ]);
    assert.equal(crontab.code, 0, crontab.stderr);
    const queued = async () => {
      const { stdout } = await exec(['/usr/sbin/postqueue', '-j']);
      return stdout.split('\n').filter((line) => line.includes('someone@nowhere.invalid')).length;
    };
    const maildrop = async () =>
      (
        await exec(['/usr/bin/find', '/var/spool/postfix/maildrop', '-type', 'f', '-uid', String(aliceUid)])
      ).stdout.trim();
    for (let i = 0; i < 50 && (await queued()) === 0 && (await maildrop()) !== ''; i++)
      await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok((await queued()) > 0 || (await maildrop()) !== '', 'the mail is queued');
    assert.equal((await exec(['/usr/bin/test', '-e', '/var/spool/cron/crontabs/alice'])).code, 0);
    assert.equal((await ipcObjectsOf(running, aliceUid)).length, 4, 'her IPC objects');
    const messageQueue = async () =>
      (await exec(['/usr/bin/python3', '-c', `${MQ_OPEN} os.O_RDONLY) >= 0 and print("there")`])).stdout;
    assert.equal(await messageQueue(), 'there\n', 'her message queue');

    // The sandbox's /tmp shows this machine's through its overlay: other tests' system roots there
    // (berth-root-*) have users of their own whose uids may be alice's. Those are not looked into.
    const machinesOwn = ['-path', '/tmp/berth-*', '-prune', '-o'];
    const removed = await sandboxCall(sandbox, 'removeacct', { user: 'alice' });
    assert.equal(removed.status, 200, removed.info);
    const left = await exec([
      '/usr/bin/find',
      '/tmp',
      '/var/tmp',
      '/dev/shm',
      '/run/lock',
      '/var/lib/php/sessions',
      '/var/spool/cron/crontabs',
      '/var/spool/postfix',
      '-xdev',
      ...machinesOwn,
      '-uid',
      String(aliceUid),
      '-print',
    ]);
    assert.equal(left.stdout.trim(), '', `left behind:\n${left.stdout}`);
    assert.equal(await queued(), 0, 'the queued mail is gone');
    assert.deepEqual(await ipcObjectsOf(running, aliceUid), [], 'her IPC objects are gone');
    assert.equal(await messageQueue(), '', 'her message queue is gone');
    assert.notEqual((await exec(['/usr/bin/test', '-e', phpLog])).code, 0, 'her PHP-FPM log is gone');
    assert.ok(!(await qgroups()).includes(qgroup), `her qgroup ${qgroup} is gone`);

    await create('carol');
    const carolUid = await uidOf('carol');
    assert.ok(carolUid > aliceUid, `carol has uid ${carolUid}, alice had ${aliceUid}`);
    const owned = await exec([
      '/usr/bin/find',
      '/tmp',
      '/var/tmp',
      '/dev/shm',
      '-xdev',
      ...machinesOwn,
      '-uid',
      String(carolUid),
      '-print',
    ]);
    assert.equal(owned.stdout.trim(), '');
    assert.notEqual((await as('carol', 'cat /tmp/alice-tmp /dev/shm/alice-shm')).code, 0);
  });
});
