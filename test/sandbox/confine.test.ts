// An account's processes cannot make a btrfs subvolume or snapshot (which would be outside its
// qgroup, so outside its quota), in `berth sandbox` (homes on btrfs): `btrfs subvolume create` and
// `btrfs subvolume snapshot` from its PHP page, and the four ioctls themselves from Perl in its PHP,
// its jailed SSH shell and its cron jobs (a shell account's and another's), all fail with
// "Operation not permitted", while the same script run by root's runuser as the account, outside
// every way in, makes the subvolume. A cron job that takes every POSIX message queue it can takes
// them in an IPC namespace of its own: the account next door still makes all of its own; an SSH
// session cannot make any.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxSsh,
  startSandbox,
} from '../process.ts';

/** This machine's mq_open and mq_unlink (x86_64's, or arm64's). */
const [MQ_OPEN, MQ_UNLINK] = process.arch === 'arm64' ? [180, 181] : [240, 241];

/**
 * Each ioctl that makes a subvolume or snapshot, asked for in the directory given, then what it
 * did: `<request> 0` when it worked, else the errno (1 is EPERM). No module: a jail's Perl has none.
 */
const SUBVOL_PL = `my $dir = shift;
open(my $fh, '<', $dir) or die "$dir: $!";
for my $r (0x5000940e, 0x50009418, 0x50009401, 0x50009417) {
  my $name = sprintf('sv-%x', $r);
  # btrfs_ioctl_vol_args (fd, name) for the first and third, _v2 (fd, transid, flags, 32 bytes, name).
  my $args = ($r == 0x5000940e || $r == 0x50009401)
    ? pack('q a4088', -1, $name) : pack('q Q Q x32 a4040', -1, 0, 0, $name);
  my $ok = ioctl($fh, $r, $args);
  printf "%x %d\\n", $r, defined $ok ? 0 : $! + 0;
}
`;

/**
 * Makes POSIX message queues until refused, writes how many and why to the file given, holds them
 * (the system call takes the name without the slash that glibc's mq_open strips).
 */
const MQ_PL = `my ($out, $hold) = @ARGV;
my ($made, $errno, @names) = (0, 0);
my $attr = pack('q8', 0, 1, 1, 0, 0, 0, 0, 0);
for my $i (1 .. 300) {
  my $name = "berth-test-$$-$i";
  my $fd = syscall(${MQ_OPEN}, $name, 0100 | 02, 0600, $attr);
  if ($fd < 0) { $errno = $! + 0; last }
  $made++;
  push @names, $name;
}
open(my $fh, '>', $out) or die "$out: $!";
print $fh "made=$made errno=$errno\\n";
close $fh;
sleep $hold;
syscall(${MQ_UNLINK}, $_) for @names;
`;

const PAGE = `<?php
header('content-type: text/plain');
$d = __DIR__;
// PHP's mail() still works: postdrop still gains its group under the filter root installed.
echo 'mail=', var_export(mail('sela@sela.example', 'confined', 'PHP under the filter'), true), "\n";
echo shell_exec("/usr/bin/btrfs subvolume create $d/php-sv 2>&1; /usr/bin/btrfs subvolume snapshot $d/base $d/php-snap 2>&1; /usr/bin/perl $d/subvol.pl $d 2>&1; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status");
`;

const EPERM_ALL = '5000940e 1\n50009418 1\n50009401 1\n50009417 1\n';

describe('no subvolume, snapshot or shared IPC object from an account, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-confine-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  const password = (user: string) => `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`;

  const exec = async (args: string[]) => {
    const result = await running.exec(args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  /** Writes a file of the account's as the account's user (as an upload would). */
  const put = (user: string, path: string, content: string) =>
    exec([
      '/usr/sbin/runuser',
      '-u',
      user,
      '--',
      '/usr/bin/perl',
      '-e',
      'open(my $f, ">", $ARGV[0]) or die $!; print $f $ARGV[1]; close $f or die $!',
      path,
      content,
    ]);
  const exists = async (path: string) => (await running.exec(['/usr/bin/test', '-e', path])).code === 0;
  /** The file once it is there (a cron job writes it within a minute or so). */
  const waitForFile = async (path: string) => {
    for (let i = 0; i < 90; i++) {
      const read = await running.exec(['/usr/bin/cat', path]);
      if (read.code === 0 && read.stdout.endsWith('\n')) return read.stdout;
      await sleep(1000);
    }
    assert.fail(`${path} was not written within 90 seconds:\n${await running.log()}`);
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    for (const [user, shell] of [
      ['sela', '1'],
      ['olga', '0'],
      ['nico', '1'],
    ] as const) {
      const made = await sandboxCall(sandbox, 'createacct', {
        user,
        domain: `${user}.example`,
        email: `${user}@example.org`,
        package: 'default',
        password: password(user),
        shell,
      });
      assert.equal(made.status, 200, made.info);
      await put(user, `/home/${user}/public_html/subvol.pl`, SUBVOL_PL);
      await put(user, `/home/${user}/public_html/mq.pl`, MQ_PL);
    }
  });
  after(async () => {
    if (running?.child.exitCode === null) await running.stop();
  });

  it('root’s runuser, no way in of the account’s, makes a subvolume with the same script', async () => {
    const scratch = '/home/sela/public_html/scratch';
    await exec(['/usr/sbin/runuser', '-u', 'sela', '--', '/usr/bin/mkdir', scratch]);
    const out = await exec([
      '/usr/sbin/runuser',
      '-u',
      'sela',
      '--',
      '/usr/bin/perl',
      `${scratch}/../subvol.pl`,
      scratch,
    ]);
    assert.match(out, /^5000940e 0$/m, out);
    assert.doesNotMatch(out, / 1$/m, out);
    assert.equal(await exists(`${scratch}/sv-5000940e`), true);
    await exec(['/usr/bin/btrfs', 'subvolume', 'delete', `${scratch}/sv-5000940e`]);
    // A subvolume of the account's to snapshot, made the same way.
    await exec([
      '/usr/sbin/runuser',
      '-u',
      'sela',
      '--',
      '/usr/bin/btrfs',
      'subvolume',
      'create',
      '/home/sela/public_html/base',
    ]);
  });

  it('its PHP can make neither a subvolume nor a snapshot: Operation not permitted', async () => {
    await put('sela', '/home/sela/public_html/confine.php', PAGE);
    const page = curl([
      '-k',
      '--resolve',
      `sela.example:${sandbox.https_port}:127.0.0.1`,
      `https://sela.example:${sandbox.https_port}/confine.php`,
    ]);
    assert.equal(page.status, 200, page.body);
    assert.match(page.body, /cannot create subvolume.*Operation not permitted/i, page.body);
    assert.match(page.body, /cannot snapshot.*Operation not permitted/i, page.body);
    assert.ok(page.body.includes(EPERM_ALL), page.body);
    // Installed by root, without no_new_privs.
    assert.match(page.body, /^NoNewPrivs:\s+0$/m, page.body);
    assert.match(page.body, /^mail=true$/m, page.body);
    assert.match(page.body, /^Seccomp:\s+2$/m, page.body);
    for (const name of ['php-sv', 'php-snap', 'sv-5000940e', 'sv-50009418'])
      assert.equal(await exists(`/home/sela/public_html/${name}`), false, name);
  });

  it('its jailed SSH shell can make none either, nor a SysV or POSIX IPC object', async () => {
    const session = sandboxSsh(sandbox, 'ssh', 'sela', password('sela'), [
      `perl /public_html/subvol.pl /public_html; grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status; perl /public_html/mq.pl /public_html/ssh-mq.txt 0; cat /public_html/ssh-mq.txt; perl -e 'print defined(shmget(0, 4096, 01000 | 0600)) ? "shm made" : "shm errno=" . ($! + 0), "\\n"'`,
    ]);
    assert.equal(session.code, 0, session.stderr);
    assert.ok(session.stdout.startsWith(EPERM_ALL), session.stdout + session.stderr);
    assert.match(session.stdout, /^NoNewPrivs:\s+1$/m);
    assert.match(session.stdout, /^Seccomp:\s+2$/m);
    assert.match(session.stdout, /^made=0 errno=1$/m);
    assert.match(session.stdout, /^shm errno=1$/m);
    assert.equal(await exists('/home/sela/public_html/sv-5000940e'), false);
    // An interactive login is confined the same way, and is bash, a login shell.
    const login = sandboxSsh(
      sandbox,
      'ssh',
      'sela',
      password('sela'),
      [],
      'echo "shell=$0"; grep ^Seccomp: /proc/self/status; exit\n',
    );
    assert.match(login.stdout, /shell=-bash/, login.stdout + login.stderr);
    assert.match(login.stdout, /Seccomp:\s+2/, login.stdout);
  });

  it('its cron jobs, with a shell or without, can make none; a job’s message queues are its own', async () => {
    const jobs = {
      sela: 'export LC_ALL=C; perl /public_html/subvol.pl /public_html > /public_html/cron-subvol.txt 2>&1; perl /public_html/mq.pl /public_html/cron-mq.txt 40',
      olga: 'export LC_ALL=C; perl /public_html/subvol.pl /public_html > /public_html/cron-subvol.txt 2>&1',
    };
    for (const [user, command] of Object.entries(jobs)) {
      const added = await sandboxHolderCall(sandbox, { user, password: password(user) }, 'add_cron_job', {
        schedule: '* * * * *',
        command,
      });
      assert.equal(added.status, 200, added.body.info);
    }
    for (const user of Object.keys(jobs)) {
      const out = await waitForFile(`/home/${user}/public_html/cron-subvol.txt`);
      assert.equal(out, EPERM_ALL, `${user}'s job`);
      assert.equal(await exists(`/home/${user}/public_html/sv-5000940e`), false);
    }
    // sela's job holds every queue its IPC namespace allows (256): nico's are untouched.
    const held = await waitForFile('/home/sela/public_html/cron-mq.txt');
    assert.equal(held, 'made=256 errno=28\n');
    const nico = await exec([
      '/usr/sbin/runuser',
      '-u',
      'nico',
      '--',
      '/usr/bin/perl',
      '/home/nico/public_html/mq.pl',
      '/home/nico/public_html/mq.txt',
      '0',
    ]);
    assert.equal(nico, '');
    assert.equal(await exec(['/usr/bin/cat', '/home/nico/public_html/mq.txt']), 'made=256 errno=28\n');
  });
});
