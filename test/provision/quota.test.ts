// Disk quotas: which backend enforces them, the commands each runs, and, on a real btrfs filesystem
// (a loop-mounted image on the test root's /home), homes that are subvolumes with their qgroup
// limited, made, changed and removed through the API, and what doctor says when they differ.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  constants,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type LinuxConfig, loadConfig } from '../../src/config/index.ts';
import { inspect, refreshUsage } from '../../src/operations/maintenance.ts';
import { isSubvolume } from '../../src/provision/linux/filesystems.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { type CommandRunner, execRunner } from '../../src/provision/linux/run.ts';
import { parseQgroups } from '../../src/provision/linux/user/btrfs-quota.ts';
import { chooseQuotaBackend, parseRepquota, quotaBackend } from '../../src/provision/linux/user/quota.ts';
import { type Account, findAccount } from '../../src/store/accounts.ts';
import { callCreateacct, createAccount, streamsNothing, summary, tempDir } from '../helpers.ts';
import { type LinuxHarness, linuxSetup } from './system-root.ts';

const BTRFS = '/usr/bin/btrfs';
const linuxConfig = (changes: Partial<LinuxConfig> = {}): LinuxConfig => ({
  ...loadConfig().linux,
  ...changes,
});

/** A runner that answers from a table and keeps every command it was given. */
function scriptedRunner(answers: Record<string, string | Error> = {}) {
  const commands: string[][] = [];
  const runner: CommandRunner = {
    async run(argv) {
      commands.push([...argv]);
      const answer = answers[argv[0]!] ?? '';
      if (answer instanceof Error) throw answer;
      return { stdout: answer, stderr: '' };
    },
    stream: streamsNothing,
  };
  return { runner, commands };
}

const account = (user: string, quota: number | null) =>
  ({ user, homedir: `/home/${user}`, limits: { quota } }) as unknown as Account;

/** A small btrfs filesystem with quotas on, mounted on `dir` until the returned function runs. */
function mountBtrfs(dir: string): () => void {
  const image = join(tempDir('berth-btrfs-'), 'homes.img');
  writeFileSync(image, '');
  truncateSync(image, 256 * 1024 * 1024);
  execFileSync('/usr/sbin/mkfs.btrfs', ['-q', '--', image], { stdio: 'pipe' });
  mkdirSync(dir, { recursive: true });
  const device = execFileSync('/usr/sbin/losetup', ['--find', '--show', '--', image], {
    encoding: 'utf8',
  }).trim();
  execFileSync('/usr/bin/mount', ['-t', 'btrfs', '--', device, dir]);
  // The device goes when its mount does (with this namespace, if not before).
  execFileSync('/usr/sbin/losetup', ['--detach', device]);
  const unmount = () => execFileSync('/usr/bin/umount', ['--', dir]);
  try {
    execFileSync(BTRFS, ['quota', 'enable', dir]);
  } catch (error) {
    unmount();
    throw error;
  }
  return unmount;
}

/** The account's qgroup (level 1, numbered by the home's group). */
const groupOf = (home: string) => `1/${lstatSync(home).gid}`;
/** A qgroup's row: its limit of exclusive space, and the qgroups it is in. */
const qgroupRow = (home: string, id: string) => {
  const shown = execFileSync(BTRFS, ['qgroup', 'show', '-pre', '--raw', '--', home], { encoding: 'utf8' });
  const row = shown
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .find((fields) => fields[0] === id);
  return { exclusive: Number(row?.[2]), limit: row?.[4], parents: row?.[5] };
};
const limitOf = (home: string) => qgroupRow(home, groupOf(home)).limit;
const subvolumeId = (path: string) =>
  execFileSync(BTRFS, ['inspect-internal', 'rootid', '--', path], { encoding: 'utf8' }).trim();

/** A chain of `depth` directories `d/d/d…` in `dir` (far past PATH_MAX), made through descriptors. */
function deepChain(dir: string, depth: number): void {
  const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
  let fd = openSync(dir, OPEN_DIRECTORY);
  for (let i = 0; i < depth; i++) {
    mkdirSync(`/proc/self/fd/${fd}/d`);
    const next = openSync(`/proc/self/fd/${fd}/d`, OPEN_DIRECTORY);
    closeSync(fd);
    fd = next;
  }
  closeSync(fd);
}

describe('the quota backend', () => {
  it('is btrfs on btrfs, Linux quotas where quota_filesystem is set, else none (auto)', () => {
    const plain = tempDir();
    assert.equal(chooseQuotaBackend(linuxConfig(), plain), 'none');
    assert.equal(chooseQuotaBackend(linuxConfig({ quotaFilesystem: '/home' }), plain), 'linux');
    assert.equal(chooseQuotaBackend(linuxConfig({ quota: 'none', quotaFilesystem: '/home' }), plain), 'none');
    assert.equal(chooseQuotaBackend(linuxConfig({ quota: 'btrfs' }), plain), 'btrfs');
    assert.throws(
      () => chooseQuotaBackend(linuxConfig({ quota: 'linux' }), plain),
      /quota = "linux" needs quota_filesystem/,
    );
  });

  it('sets Linux user quotas of blocks and inodes; unlimited lifts both, 0 MB is the least setquota can set', async () => {
    const { runner, commands } = scriptedRunner();
    const linux = linuxQuotas(runner, true);
    await linux.setLimit({ account: account('alice', 10), home: '/home/alice' }, 10);
    await linux.setLimit({ account: account('alice', null), home: '/home/alice' }, null);
    await linux.setLimit({ account: account('alice', 0), home: '/home/alice' }, 0);
    const setquota = (b: string, i: string) => [
      '/usr/sbin/setquota',
      '-u',
      '--',
      'alice',
      b,
      b,
      i,
      i,
      '/home',
    ];
    assert.deepEqual(commands, [setquota('10240', '1000'), setquota('0', '0'), setquota('1', '1')]);
    // setquota has no --prefix: below another system root it would change this machine's quotas.
    const below = scriptedRunner();
    await linuxQuotas(below.runner, false).setLimit({ account: account('alice', 10), home: '/x' }, 10);
    assert.deepEqual(below.commands, []);
  });

  it('has doctor say a quota is not enforced: quotas off, no backend; and compare limits with the store', async () => {
    const housed = [
      { account: account('alice', 10), home: '/home/alice' },
      { account: account('bob', null), home: '/home/bob' },
      { account: account('carol', 5), home: '/home/carol' },
    ];
    const off = scriptedRunner({ '/usr/sbin/quotaon': 'user quota on /home (/dev/sda1) is off\n' });
    assert.deepEqual(await linuxQuotas(off.runner, true).inspect(housed), [
      'alice: disk quota of 10 MB not enforced: user quotas are off on /home',
      'carol: disk quota of 5 MB not enforced: user quotas are off on /home',
    ]);
    const on = scriptedRunner({
      '/usr/sbin/quotaon': 'user quota on /home (/dev/sda1) is on\n',
      '/usr/sbin/repquota': [
        '*** Report for user quotas on device /dev/sda1',
        'User            used    soft    hard  grace    used  soft  hard  grace',
        '----------------------------------------------------------------------',
        'root      --      20       0       0      0       3     0     0      0',
        'alice     --     120   10240   10240      0      12  1000  1000      0',
        'carol     +-    9000    2048    2048 604800      40   500   500      0',
        '',
      ].join('\n'),
    });
    assert.deepEqual(await linuxQuotas(on.runner, true).inspect(housed), [
      'carol: user quota on /home is 2048 KiB and 500 files, not 5120 KiB and 500 files (5 MB)',
    ]);
    const none = quotaBackend({ linux: linuxConfig(), runner: scriptedRunner().runner, live: true }, 'none');
    assert.deepEqual(await none.inspect(housed), [
      'alice: disk quota of 10 MB not enforced: no quota backend (set [linux] quota, see docs/linux-driver.md)',
      'carol: disk quota of 5 MB not enforced: no quota backend (set [linux] quota, see docs/linux-driver.md)',
    ]);
  });
});

describe('disk usage from the quota backend', () => {
  const REPQUOTA = [
    '*** Report for user quotas on device /dev/sda1',
    'Block grace time: 7days; Inode grace time: 7days',
    '                        Block limits                File limits',
    'User            used    soft    hard  grace    used  soft  hard  grace',
    '----------------------------------------------------------------------',
    'root      --      20       0       0      0       3     0     0      0',
    'alice     --     120   10240   10240      0      12  1000  1000      0',
    'carol     +-    9000    2048    2048 1767225600   3000000   500   500      0',
    '#1234     --       8       0       0      0       2     0     0      0',
    '',
  ].join('\n');

  it('reads repquota -p: KiB used, and the hard limits of KiB and files, by user', () => {
    assert.deepEqual(
      [...parseRepquota(REPQUOTA)],
      [
        ['root', { usedKiB: 20, blocks: 0, inodes: 0 }],
        ['alice', { usedKiB: 120, blocks: 10240, inodes: 1000 }],
        ['carol', { usedKiB: 9000, blocks: 2048, inodes: 500 }],
        ['#1234', { usedKiB: 8, blocks: 0, inodes: 0 }],
      ],
    );
  });

  it('reads btrfs qgroup show -pre --raw: exclusive bytes, limit and parents, by qgroup', () => {
    // btrfs-progs 6.2, which adds a Path column; older ones end at Parent.
    const shown = [
      'Qgroupid    Referenced    Exclusive  Max referenced  Max exclusive Parent     Path ',
      '--------    ----------    ---------  --------------  ------------- ------     ---- ',
      '0/5              16384        16384            none           none -          <toplevel>',
      '0/256          3162112      3162112            none           none 1/1001     alice',
      '0/257            16384        16384            none           none 1/1001,1/9 alice/public_html/sv',
      '1/1001         3178496      3178496            none       10485760 -          <0 member qgroups>',
      '',
    ].join('\n');
    assert.deepEqual(
      [...parseQgroups(shown)],
      [
        ['0/5', { exclusive: 16384, limit: 'none', parents: ['-'] }],
        ['0/256', { exclusive: 3162112, limit: 'none', parents: ['1/1001'] }],
        ['0/257', { exclusive: 16384, limit: 'none', parents: ['1/1001', '1/9'] }],
        ['1/1001', { exclusive: 3178496, limit: '10485760', parents: ['-'] }],
      ],
    );
  });

  it('takes every account’s bytes from one quota report, a user it leaves out owning nothing', async () => {
    const housed = [
      { account: account('alice', 10), home: '/home/alice' },
      { account: account('bob', null), home: '/home/bob' },
      { account: account('carol', 5), home: '/home/carol' },
    ];
    const on = scriptedRunner({
      '/usr/sbin/quotaon': 'user quota on /home (/dev/sda1) is on\n',
      '/usr/sbin/repquota': REPQUOTA,
    });
    assert.deepEqual(
      [...((await linuxQuotas(on.runner, true).diskUsage?.(housed)) ?? [])],
      [
        ['/home/alice', 120 * 1024],
        ['/home/bob', 0],
        ['/home/carol', 9000 * 1024],
      ],
    );
    assert.deepEqual(
      on.commands.map((argv) => argv[0]),
      ['/usr/sbin/quotaon', '/usr/sbin/repquota'],
      'two commands, whatever the number of accounts',
    );
    // Quotas off, or another system root (whose quotas are not this machine's): the homes are walked.
    const off = scriptedRunner({ '/usr/sbin/quotaon': 'user quota on /home (/dev/sda1) is off\n' });
    assert.deepEqual([...((await linuxQuotas(off.runner, true).diskUsage?.(housed)) ?? [])], []);
    const below = scriptedRunner();
    assert.deepEqual([...((await linuxQuotas(below.runner, false).diskUsage?.(housed)) ?? [])], []);
    assert.deepEqual(below.commands, []);
  });
});

function linuxQuotas(runner: CommandRunner, live: boolean) {
  return quotaBackend({ linux: linuxConfig({ quotaFilesystem: '/home' }), runner, live }, 'linux');
}

// A mount made in this machine's namespace would be copied into every namespace made meanwhile (a
// sandbox starting): these tests run in a mount namespace of their own, this file run again there.
const INSIDE = 'BERTH_QUOTA_TEST_NAMESPACE';
/** The environment without the test runner's own marker, so that the inner run reports as usual. */
const outerEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== 'NODE_TEST_CONTEXT'));
if (process.env[INSIDE] === '1') btrfsInNamespace();
else
  describe('btrfs quotas below a system root', () => {
    it('pass in a private mount namespace', () => {
      const inner = spawnSync(
        '/usr/bin/unshare',
        [
          '--mount',
          '--propagation',
          'private',
          '--',
          process.execPath,
          '--test',
          '--test-reporter=spec',
          import.meta.filename,
        ],
        { encoding: 'utf8', env: { ...outerEnv(), [INSIDE]: '1' }, timeout: 300_000 },
      );
      assert.equal(inner.status, 0, `${inner.stdout}\n${inner.stderr}`);
      assert.match(inner.stdout, /^✔ btrfs quotas below a system root, in the namespace/m);
      assert.match(inner.stdout, /^ℹ fail 0$/m);
    });
  });

/** The tests themselves, run by the file's second run, in its own mount namespace. */
function btrfsInNamespace() {
  describe('btrfs quotas below a system root, in the namespace', () => {
    let h: LinuxHarness;
    let unmount = () => {};
    const home = (user: string) => join(h.root, 'home', user);

    before(async () => {
      h = await linuxSetup((root) => {
        unmount = mountBtrfs(join(root, 'home'));
        // The jail template makeSystemRoot made is under the mount now: made again on btrfs.
        const template = join(root, 'home/.berth-jail');
        for (const dir of ['usr/bin', 'etc', 'dev']) mkdirSync(join(template, dir), { recursive: true });
        copyFileSync('/usr/bin/true', join(template, 'usr/bin/true'));
        symlinkSync('usr/bin', join(template, 'bin'));
      });
      await h.call('addpkg', { name: 'small', shell: 'on', quota: '10' });
    });
    after(async () => {
      await h.close().catch(() => {});
      unmount();
    });

    it('makes each home a subvolume whose qgroup limits its exclusive space to the quota', async () => {
      for (const user of ['quinn', 'rhea']) {
        const from = h.commands.length;
        const reply = await callCreateacct(h, user, {
          domain: `${user}.example`,
          email: 'q@example.org',
          package: 'small',
        });
        assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
        // Made in its qgroup, then limited: no id looked up, no assign, no limit of the home's own.
        const gid = String(statSync(home(user)).gid);
        assert.deepEqual(
          h.commands
            .slice(from)
            .filter(
              (argv) => argv[0] === BTRFS && argv.some((arg) => arg === home(user) || arg === `1/${gid}`),
            ),
          [
            [BTRFS, 'qgroup', 'create', `1/${gid}`, join(h.root, 'home')],
            [BTRFS, 'subvolume', 'create', '-i', `1/${gid}`, '--', home(user)],
            [BTRFS, 'qgroup', 'limit', '-e', String(10 * 1024 * 1024), `1/${gid}`, join(h.root, 'home')],
          ],
        );
        assert.ok(isSubvolume(home(user)), `${user}'s home is a subvolume`);
        assert.equal(limitOf(home(user)), String(10 * 1024 * 1024));
        // The home is in the account's qgroup, and carries no limit of its own.
        const own = qgroupRow(home(user), `0/${subvolumeId(home(user))}`);
        assert.deepEqual([own.limit, own.parents], ['none', groupOf(home(user))]);
        assert.equal(statSync(home(user)).mode & 0o777, 0o751);
      }
      // The jail is a reflink copy of the template (no hard link leaves a subvolume), its usr a
      // read-only snapshot of the template's, which became a subvolume: outside the account's qgroup.
      assert.ok(existsSync(join(home('quinn'), 'usr/bin/true')));
      assert.ok(isSubvolume(join(h.root, 'home/.berth-jail/usr')), 'the template’s usr is a subvolume');
      assert.ok(isSubvolume(join(home('quinn'), 'usr')), 'the jail’s usr is a snapshot');
      const readOnly = execFileSync(BTRFS, ['property', 'get', '-ts', join(home('quinn'), 'usr'), 'ro'], {
        encoding: 'utf8',
      });
      assert.equal(readOnly.trim(), 'ro=true');
      assert.deepEqual(await inspect(h.services), []);
    });

    it('editquota changes the limit, unlimited lifts it, and doctor compares it with the store', async () => {
      assert.equal((await h.call('editquota', { user: 'quinn', quota: '20' })).statusCode, 200);
      assert.equal(limitOf(home('quinn')), String(20 * 1024 * 1024));
      assert.equal((await h.call('editquota', { user: 'quinn', quota: 'unlimited' })).statusCode, 200);
      assert.equal(limitOf(home('quinn')), 'none');
      assert.equal(limitOf(home('rhea')), String(10 * 1024 * 1024), 'the other account is unchanged');
      execFileSync(BTRFS, [
        'qgroup',
        'limit',
        '-e',
        String(3 * 1024 * 1024),
        groupOf(home('quinn')),
        home('quinn'),
      ]);
      assert.deepEqual(await inspect(h.services), ['quinn: btrfs quota is 3 MB, not unlimited']);
      assert.equal((await h.call('editquota', { user: 'quinn', quota: '10' })).statusCode, 200);
      assert.deepEqual(await inspect(h.services), []);
    });

    it('undoes the limit when a later step of the call fails', async () => {
      h.failAt.step = 'login shell';
      h.commands.length = 0;
      const reply = await h.call('changepackage', { user: 'quinn', package: 'default' });
      h.failAt.step = null;
      assert.notEqual(reply.statusCode, 200);
      const limits = h.commands.filter(
        (argv) => argv[1] === 'qgroup' && argv[2] === 'limit' && argv[5]?.startsWith('1/'),
      );
      assert.deepEqual(
        limits.map((argv) => argv[4]),
        ['none', String(10 * 1024 * 1024)],
        'the default package lifted the limit, and the undo set it again',
      );
      assert.equal(limitOf(home('quinn')), String(10 * 1024 * 1024));
    });

    it('brings a subvolume the account made inside its home under its quota, with what it holds', async () => {
      const nested = join(home('rhea'), 'public_html', 'nested');
      execFileSync(BTRFS, ['subvolume', 'create', '--', nested]);
      // One inside that one too: every depth is the account's; and one named as a jail's usr is
      // the jail's only at the top of the home, which is root's.
      const deeper = join(nested, 'deeper');
      execFileSync(BTRFS, ['subvolume', 'create', '--', deeper]);
      mkdirSync(join(nested, 'rhea'));
      const usr = join(nested, 'rhea', 'usr');
      execFileSync(BTRFS, ['subvolume', 'create', '--', usr]);
      writeFileSync(join(nested, 'fill'), Buffer.alloc(4 * 1024 * 1024, 1));
      writeFileSync(join(deeper, 'fill'), Buffer.alloc(1024 * 1024, 1));
      execFileSync(BTRFS, ['filesystem', 'sync', '--', nested]);
      assert.deepEqual(await inspect(h.services), [
        'rhea: subvolume rhea/public_html/nested inside the home is outside its quota',
        'rhea: subvolume rhea/public_html/nested/deeper inside the home is outside its quota',
        'rhea: subvolume rhea/public_html/nested/rhea/usr inside the home is outside its quota',
      ]);
      const before = qgroupRow(home('rhea'), groupOf(home('rhea'))).exclusive;
      const rhea = await findAccount(h.services.store.db, 'rhea');
      await h.services.driver.enforceQuotas!([rhea!]);
      for (const subvolume of [nested, deeper, usr])
        assert.equal(qgroupRow(home('rhea'), `0/${subvolumeId(subvolume)}`).parents, groupOf(home('rhea')));
      const after = qgroupRow(home('rhea'), groupOf(home('rhea'))).exclusive;
      assert.ok(after - before >= 5 * 1024 * 1024, `the account's qgroup counts them: ${before} → ${after}`);
      assert.deepEqual(await inspect(h.services), []);
    });

    it('the sweep reads the homes only when a subvolume it has not seen may be an account’s, and puts it in the account’s qgroup', async () => {
      const btrfs = quotaBackend({ linux: linuxConfig(), runner: execRunner(), live: false }, 'btrfs');
      const base = join(h.root, 'home');
      const accounts = await Promise.all(['quinn', 'rhea'].map((u) => findAccount(h.services.store.db, u)));
      let read = 0;
      const homes = async () => {
        read++;
        return accounts.map((account) => ({ account: account!, home: home(account!.user) }));
      };
      await btrfs.sweep!(base, homes);
      assert.equal(read, 1, 'the first sweep looks at every home');
      await btrfs.sweep!(base, homes);
      assert.equal(read, 1, 'nothing new: the homes are not read');
      // A new home (made by Berth, one level inside the base) and its jail's usr: not the accounts'.
      const other = join(base, 'sweep-home');
      execFileSync(BTRFS, ['subvolume', 'create', '--', other]);
      execFileSync(BTRFS, ['subvolume', 'create', '--', join(other, 'usr')]);
      await btrfs.sweep!(base, homes);
      assert.equal(read, 1, 'a home and its jail are not an account’s subvolumes');
      // quinn's own, two levels inside its home; then one just inside that one.
      const own = join(home('quinn'), 'public_html', 'own');
      execFileSync(BTRFS, ['subvolume', 'create', '--', own]);
      await btrfs.sweep!(base, homes);
      assert.equal(read, 2);
      assert.equal(qgroupRow(home('quinn'), `0/${subvolumeId(own)}`).parents, groupOf(home('quinn')));
      const inside = join(own, 'inside');
      execFileSync(BTRFS, ['subvolume', 'create', '--', inside]);
      await btrfs.sweep!(base, homes);
      assert.equal(read, 3, 'a subvolume just inside the account’s own is the account’s too');
      assert.equal(qgroupRow(home('quinn'), `0/${subvolumeId(inside)}`).parents, groupOf(home('quinn')));
      for (const path of [inside, own, join(other, 'usr'), other])
        execFileSync(BTRFS, ['subvolume', 'delete', '--', path]);
    });

    it('usage refresh takes each account’s disk space from its qgroup, one listing for every home', async () => {
      // Root's file: a walk would leave it out, the qgroup counts whatever is in the home.
      writeFileSync(join(home('quinn'), 'public_html', 'usage.bin'), Buffer.alloc(3 * 1024 * 1024, 1));
      execFileSync(BTRFS, ['filesystem', 'sync', '--', home('quinn')]);
      h.commands.length = 0;
      assert.equal(await refreshUsage(h.services), 2);
      const listings = h.commands.filter((argv) => argv[1] === 'qgroup' && argv[2] === 'show');
      assert.equal(listings.length, 1, 'one listing for both homes');
      for (const user of ['quinn', 'rhea']) {
        const exclusive = qgroupRow(home(user), groupOf(home(user))).exclusive;
        const stored = Number((await summary(h, user)).quota_usage);
        assert.equal(stored, Math.ceil(exclusive / (1024 * 1024)), `${user}'s quota_usage`);
      }
      assert.ok(Number((await summary(h, 'quinn')).quota_usage) >= 3);
      assert.ok(Number((await summary(h, 'rhea')).quota_usage) >= 5, 'its own subvolumes are counted');
    });

    it('removeacct deletes the subvolume, the account’s own subvolumes in it too, and follows no link', async () => {
      const outside = join(tempDir(), 'keep');
      writeFileSync(outside, 'kept');
      symlinkSync(outside, join(home('rhea'), 'public_html', 'nested', 'link'));
      for (const user of ['quinn', 'rhea']) {
        const reply = await h.call('removeacct', { user });
        assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
        assert.equal(lstatSync(home(user), { throwIfNoEntry: false }), undefined, `${user}'s home is gone`);
      }
      assert.equal(readFileSync(outside, 'utf8'), 'kept');
      const left = execFileSync(BTRFS, ['subvolume', 'list', '--', join(h.root, 'home')], {
        encoding: 'utf8',
      });
      assert.deepEqual(
        left
          .trim()
          .split('\n')
          .map((line) => / path (.+)$/.exec(line)?.[1]),
        ['.berth-jail/usr'],
        'only the template’s usr is left',
      );
    });

    /** What the filesystem of the homes still has of an account: its subvolumes and its qgroup. */
    const leftOf = (gid: number) => {
      const base = join(h.root, 'home');
      const subvolumes = execFileSync(BTRFS, ['subvolume', 'list', '--', base], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((line) => / path (.+)$/.exec(line)?.[1]);
      const qgroups = execFileSync(BTRFS, ['qgroup', 'show', '--raw', '--', base], { encoding: 'utf8' });
      return { subvolumes, qgroup: qgroups.split('\n').some((line) => line.trim().startsWith(`1/${gid} `)) };
    };

    it('removeacct deletes a home 30,000 directories deep with the account’s subvolumes and a read-only snapshot of one, each by id', async () => {
      await createAccount(h, 'sela', { domain: 'sela.example' });
      const { gid } = lstatSync(home('sela'));
      const site = join(home('sela'), 'public_html');
      deepChain(site, 30_000);
      // The review's cases: a subvolume of the account's own beside the deep chain, one inside it,
      // and a read-only snapshot, which no file of can be unlinked.
      execFileSync(BTRFS, ['subvolume', 'create', '--', join(site, 'A')]);
      writeFileSync(join(site, 'A', 'f'), 'x');
      execFileSync(BTRFS, ['subvolume', 'create', '--', join(site, 'A', 'C')]);
      execFileSync(BTRFS, ['subvolume', 'snapshot', '-r', '--', join(site, 'A'), join(site, 'B')]);
      h.commands.length = 0;
      const reply = await h.call('removeacct', { user: 'sela' });
      assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
      assert.equal(lstatSync(home('sela'), { throwIfNoEntry: false }), undefined, 'the home is gone');
      assert.equal(findSystemUser(h.root, 'sela'), undefined, 'the user is gone');
      assert.deepEqual(leftOf(gid), { subvolumes: ['.berth-jail/usr'], qgroup: false });
      const byId = h.commands.filter((argv) => argv[1] === 'subvolume' && argv[2] === 'delete');
      assert.ok(
        byId.slice(0, -1).every((argv) => argv[3] === '--subvolid'),
        'those inside the home by id, the home last',
      );
    });

    it('removeacct made again finishes one cut short: the user gone already, the home gone already', async () => {
      for (const user of ['tess', 'ugo']) await createAccount(h, user, { domain: `${user}.example` });
      const gids = { tess: lstatSync(home('tess')).gid, ugo: lstatSync(home('ugo')).gid };
      // A failure in the last step says that it is not undone, and what it may leave done.
      h.failAt.step = 'system user';
      const failed = await h.call('removeacct', { user: 'tess' });
      h.failAt.step = null;
      assert.equal(failed.statusCode, 500);
      assert.match(
        (failed.body as { info: string }).info,
        /"system user" failed and cannot be undone: .*removeacct made again finishes the removal; everything else done for this call was undone/,
      );
      // What an older removal cut short left: the user gone, the home and its files still there.
      execFileSync('/usr/sbin/userdel', ['--prefix', h.root, '--', 'tess']);
      execFileSync(BTRFS, ['subvolume', 'delete', '--', home('ugo')]);
      for (const user of ['tess', 'ugo'] as const) {
        const reply = await h.call('removeacct', { user });
        assert.equal(reply.statusCode, 200, `${user}: ${JSON.stringify(reply.body)}`);
        assert.equal(lstatSync(home(user), { throwIfNoEntry: false }), undefined);
        assert.equal(findSystemUser(h.root, user), undefined);
        assert.equal(leftOf(gids[user]).qgroup, false, `${user}'s qgroup is gone`);
      }
    });
  });
}
