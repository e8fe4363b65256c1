// Berth's confinement of an account's processes (src/provision/linux/confine): the Perl script,
// run for real on this machine, sets no_new_privs and a seccomp filter under which the four
// ioctls that make a btrfs subvolume or snapshot fail with EPERM (whatever the request's high
// bits), any other ioctl reaches the kernel, and, as a login shell, SysV IPC objects and POSIX
// message queues cannot be made. The filter is inherited by what it runs, and cannot be left.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { detectLayout } from '../../src/provision/linux/cgroups.ts';
import { CONFINE, confineScript, listShell } from '../../src/provision/linux/confine/confine.ts';

// Each ioctl on a directory that is not on btrfs: the kernel answers ENOTTY, the filter EPERM.
const IOCTLS = `
opendir(my $dir, '/') or die;
open(my $fh, '<', '/') or die;
for my $r (0x5000940e, 0x50009418, 0x50009401, 0x50009417, 0xffffffff5000940e, 0x5000940f) {
  my $buf = "\\0" x 4096;
  my $ok = ioctl($fh, $r, $buf);
  printf "%x %s\\n", $r, defined $ok ? 'ok' : ($!{EPERM} ? 'EPERM' : 'kernel');
}
`;
const IPC = `
my $id = msgget(0, 01000 | 0600);
msgctl($id, 0, 0) if defined $id;
print 'msgget ', defined $id ? 'made' : ($!{EPERM} ? 'EPERM' : "$!"), "\\n";
$id = shmget(0, 4096, 01000 | 0600);
shmctl($id, 0, 0) if defined $id;
print 'shmget ', defined $id ? 'made' : ($!{EPERM} ? 'EPERM' : "$!"), "\\n";
$id = semget(0, 1, 01000 | 0600);
semctl($id, 0, 0, 0) if defined $id;
print 'semget ', defined $id ? 'made' : ($!{EPERM} ? 'EPERM' : "$!"), "\\n";
`;

describe('confine: the seccomp filter of an account’s processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-confine-'));
  // Open to nobody, who runs the script as a login shell.
  chmodSync(dir, 0o755);
  after(() => rmSync(dir, { recursive: true, force: true }));
  const script = join(dir, 'confine');
  writeFileSync(script, confineScript('/bin/sh'), { mode: 0o755 });
  const ioctls = join(dir, 'ioctls.pl');
  writeFileSync(ioctls, IOCTLS);
  const ipc = join(dir, 'ipc.pl');
  writeFileSync(ipc, IPC);
  const run = (argv: string[]) => execFileSync(argv[0]!, argv.slice(1), { encoding: 'utf8' });

  it('refuses the four ioctls that make a subvolume, to what it runs and what that runs', () => {
    assert.equal(
      run(['/usr/bin/perl', ioctls]),
      ['5000940e', '50009418', '50009401', '50009417', 'ffffffff5000940e', '5000940f']
        .map((r) => `${r} kernel\n`)
        .join(''),
    );
    // Through a shell the confined program starts: the filter is inherited.
    assert.equal(
      run([script, '--run', '/bin/sh', '-c', `/usr/bin/perl ${ioctls}`]),
      '5000940e EPERM\n50009418 EPERM\n50009401 EPERM\n50009417 EPERM\nffffffff5000940e EPERM\n5000940f kernel\n',
    );
    // Root installs it without no_new_privs (set-id programs keep working under it); anyone else
    // (a login shell) with it. These tests run as root, as Berth does.
    const status = run([script, '--run', '/bin/cat', '/proc/self/status']);
    assert.match(status, /^NoNewPrivs:\s+0$/m);
    assert.match(status, /^Seccomp:\s+2$/m);
    const asNobody = run(['/usr/sbin/runuser', '-u', 'nobody', '--', script, '-c', 'cat /proc/self/status']);
    assert.match(asNobody, /^NoNewPrivs:\s+1$/m);
    assert.match(asNobody, /^Seccomp:\s+2$/m);
  });

  it('as a login shell, refuses to make SysV IPC objects, and runs the shell it names', () => {
    assert.equal(run([script, '--run', '/usr/bin/perl', ipc]), 'msgget made\nshmget made\nsemget made\n');
    assert.equal(run([script, '-c', `/usr/bin/perl ${ipc}`]), 'msgget EPERM\nshmget EPERM\nsemget EPERM\n');
    assert.equal(run([script, '-c', 'echo "$0 $SHELL"']), 'sh /bin/sh\n');
    // A locale the system lacks (an SSH client's) is no warning of Perl's; the shell gets the
    // environment it was given.
    const env = { PATH: '/usr/bin:/bin', LANG: 'xx_XX.UTF-8' };
    const said = spawnSync(script, ['-c', 'echo "$LANG $PERL_BADLANG"'], { encoding: 'utf8', env });
    assert.deepEqual([said.stdout, said.stderr], ['xx_XX.UTF-8 \n', '']);
    // With no argument, a login shell (sshd's interactive session).
    assert.equal(
      execFileSync(script, [], { encoding: 'utf8', input: 'echo "$0"\n', env: { PATH: '/usr/bin:/bin' } }),
      '-sh\n',
    );
  });

  it('is listed in /etc/shells once, as a login shell (pam_shells refuses any other)', () => {
    const shells = join(dir, 'shells');
    writeFileSync(shells, '# /etc/shells\n/bin/sh\n/bin/bash');
    listShell(shells);
    listShell(shells);
    assert.equal(readFileSync(shells, 'utf8'), `# /etc/shells\n/bin/sh\n/bin/bash\n${CONFINE}\n`);
    listShell(join(dir, 'none'));
    assert.throws(() => readFileSync(join(dir, 'none')), /ENOENT/);
  });

  it('moves itself into each control group it is given before it runs the program', () => {
    const name = `berth-confine-test-${process.pid}`;
    const layout = detectLayout(name);
    const groups = [layout.unified, layout.v1.pids].filter((dir) => dir !== null && dir !== undefined);
    assert.ok(groups.length > 0, 'a cgroup hierarchy is mounted');
    for (const group of groups) mkdirSync(group);
    try {
      const run = spawnSync(script, [
        '--run',
        ...groups.flatMap((g) => ['--group', g]),
        '/bin/cat',
        '/proc/self/cgroup',
      ]);
      assert.equal(run.status, 0, run.stderr.toString());
      const lines = run.stdout.toString().trim().split('\n');
      // In cgroup v2 (`0::`) and in the pids hierarchy of v1, as the layout has them.
      if (layout.unified) assert.ok(lines.includes(`0::/${name}`), lines.join('\n'));
      if (layout.v1.pids)
        assert.ok(
          lines.some((line) => /^\d+:pids:/.test(line) && line.endsWith(`:/${name}`)),
          lines.join('\n'),
        );
      // A group it cannot enter: it runs nothing.
      const missing = join(groups[0]!, 'no-such-group');
      const refused = spawnSync(script, ['--run', '--group', missing, '/bin/echo', 'ran']);
      assert.equal(refused.stdout.toString(), '');
      assert.ok(refused.stderr.toString().startsWith(`confine: ${missing}: `), refused.stderr.toString());
      // An account that runs it from its shell cannot move itself into another's group (root's files).
      const intruder = spawnSync('/usr/sbin/runuser', [
        '-u',
        'nobody',
        '--',
        script,
        '--run',
        '--group',
        groups[0]!,
        '/bin/echo',
        'ran',
      ]);
      assert.equal(intruder.stdout.toString(), '');
      assert.match(intruder.stderr.toString(), /^confine: .*: Permission denied/);
      assert.equal(readFileSync(join(groups[0]!, 'cgroup.procs'), 'utf8'), '');
    } finally {
      for (const group of groups) rmdirSync(group);
    }
  });

  it('refuses --run with nothing to run, and knows only the architectures it has numbers for', () => {
    assert.throws(() => execFileSync(script, ['--run'], { stdio: 'pipe' }), /nothing to run/);
    assert.throws(
      () => confineScript('/bin/sh', 'ia32'),
      /no seccomp filter is known for the architecture ia32/,
    );
  });
});
