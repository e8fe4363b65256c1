// Removal attacked by the holder, in the sandbox (homes on btrfs, a qgroup each; CONTRACT §10): an
// account that makes its home unremovable (a chain of directories 30,000 deep beside a subvolume of
// its own; a subvolume and a read-only snapshot of it) is removed whole all the same, user, home,
// subvolumes and qgroup; and a mailbox of very many files, with a subvolume and a read-only
// snapshot in it, is removed while the API goes on answering the account next door.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { type RunningSandbox, sandboxCall, sandboxHolderCall, startSandbox } from '../process.ts';

const BTRFS = '/usr/bin/btrfs';

describe('removal the holder tries to stop, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-removal-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  const exec = (args: string[]) => running.exec(args);
  const as = (user: string, script: string) => running.asUser(user, script);
  const password = (user: string) => `Pass-${user}-1234`;
  const create = async (user: string) => {
    const made = await sandboxCall(sandbox, 'createacct', {
      user,
      domain: `${user}.example`,
      email: `${user}@example.org`,
      package: 'default',
      password: password(user),
    });
    assert.equal(made.status, 200, made.info);
  };
  /** What the system still has of an account: its user, its home, its subvolumes, its qgroup. */
  const leftOf = async (user: string, gid: string) => ({
    user: (await exec(['/usr/bin/id', '-u', '--', user])).code === 0,
    home: (await exec(['/usr/bin/test', '-e', `/home/${user}`])).code === 0,
    subvolumes: (await exec([BTRFS, 'subvolume', 'list', '/home'])).stdout
      .split('\n')
      .filter((line) => line.includes(` path ${user}`) || line.includes(`/${user}/`)),
    qgroup: (await exec([BTRFS, 'qgroup', 'show', '--raw', '/home'])).stdout
      .split('\n')
      .some((line) => line.trim().startsWith(`1/${gid} `)),
  });
  const gidOf = async (user: string) =>
    (await exec(['/usr/bin/stat', '-c', '%g', `/home/${user}`])).stdout.trim();
  const removeacct = async (user: string) => {
    const gid = await gidOf(user);
    const removed = await sandboxCall(sandbox, 'removeacct', { user });
    assert.equal(removed.status, 200, `${removed.info}\n${await running.log()}`);
    assert.deepEqual(await leftOf(user, gid), { user: false, home: false, subvolumes: [], qgroup: false });
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    for (const user of ['malb', 'mala', 'malc', 'bob']) await create(user);
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('removeacct removes a home with a chain of directories 30,000 deep and a subvolume of the account’s own', async () => {
    const made = await as(
      'malb',
      [
        'cd /home/malb/public_html',
        `${BTRFS} subvolume create /home/malb/public_html/nested >/dev/null`,
        'echo x > nested/f',
        `perl -e 'for(1..30000){mkdir "d" or die; chdir "d" or die}'`,
      ].join(' && '),
    );
    assert.equal(made.code, 0, made.stderr);
    await removeacct('malb');
  });

  it('removeacct removes a home with a subvolume and a read-only snapshot of it', async () => {
    const made = await as(
      'mala',
      [
        'cd /home/mala/public_html',
        `${BTRFS} subvolume create A >/dev/null`,
        'echo x > A/f',
        `${BTRFS} subvolume snapshot -r A B >/dev/null`,
      ].join(' && '),
    );
    assert.equal(made.code, 0, made.stderr);
    assert.notEqual((await as('mala', 'rm -f /home/mala/public_html/B/f')).code, 0, 'B is read-only');
    await removeacct('mala');
  });

  it('remove_mailbox of a mailbox of 150,000 files leaves the API answering the account next door', async () => {
    const holder = { user: 'malc', password: password('malc') };
    const email = 'info@malc.example';
    const added = await sandboxHolderCall(sandbox, holder, 'add_mailbox', {
      email,
      password: 'Mailbox-pass-1234',
    });
    assert.equal(added.status, 200, added.body.info);
    // Hard links, 50,000 to an inode: as many names as files to remove, quicker to make.
    const filled = await as(
      'malc',
      [
        'mkdir -p /home/malc/mail/malc.example/info/Maildir/cur',
        // A subvolume of its own in the mailbox, and a read-only snapshot of it: deleted by id.
        'cd /home/malc/mail/malc.example/info',
        `${BTRFS} subvolume create sub >/dev/null`,
        'echo x > sub/f',
        `${BTRFS} subvolume snapshot -r sub frozen >/dev/null`,
        'cd Maildir/cur',
        `perl -e 'for my $i (0..149999){ my $n = "$i:2,S"; if ($i % 50000 == 0) { open F, ">", $n or die; close F; $f = $n } else { link $f, $n or die "$n: $!" } }'`,
        'ls -f | wc -l',
      ].join(' && '),
    );
    assert.equal(filled.code, 0, filled.stderr);
    assert.ok(Number(filled.stdout.trim()) >= 150_000, filled.stdout);
    const bob = { user: 'bob', password: password('bob') };
    let done = false;
    const removal = sandboxHolderCall(sandbox, holder, 'remove_mailbox', { email }).finally(() => {
      done = true;
    });
    const waits: number[] = [];
    while (!done) {
      const started = performance.now();
      const info = await sandboxHolderCall(sandbox, bob, 'account_info');
      assert.equal(info.status, 200);
      waits.push(performance.now() - started);
    }
    const removed = await removal;
    assert.equal(removed.status, 200, removed.body.info);
    assert.notEqual((await exec(['/usr/bin/test', '-e', '/home/malc/mail/malc.example/info'])).code, 0);
    const subvolumes = (await exec([BTRFS, 'subvolume', 'list', '/home'])).stdout;
    assert.doesNotMatch(subvolumes, /malc\/mail/, 'its subvolumes in the mailbox are gone');
    assert.ok(waits.length >= 1, `account_info answered ${waits.length} times while the mailbox went`);
    const longest = Math.max(...waits);
    assert.ok(longest < 2500, `account_info waited ${Math.round(longest)} ms while the mailbox went`);
  });
});
