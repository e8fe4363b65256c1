// The pins FTP accounts log in to (ftp/pins.ts), with real bind mounts: the directory bound from
// a descriptor opened without following a link, never looked up again by mount; renamed, it stays
// pinned; swapped for a link to another home, the pin does not follow and pinning again refuses
// the link, leaving the login an empty directory of root's; removed, the pin is an empty deleted
// directory nothing can be made in; a missing mount is found and made again; unpinning takes the
// mount and its directories away; a home that is a btrfs subvolume is pinned and removed as any.
// Mounts made in this machine's namespace would be copied into
// every namespace made meanwhile: the tests run in a mount namespace of their own, this file run
// again there (as quota.test.ts does). Doctor looks at the pins in Pure-FTPd's namespace.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { linuxDefaults } from '../../src/config/linux.ts';
import type { LinuxContext } from '../../src/provision/linux/context.ts';
import { ftpPins } from '../../src/provision/linux/ftp/pins.ts';
import { UnsafePath } from '../../src/provision/linux/home.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import type { Account } from '../../src/store/accounts.ts';
import type { FtpAccount } from '../../src/store/ftp-accounts.ts';
import { tempDir } from '../helpers.ts';

const INSIDE = 'BERTH_FTP_PINS_TEST_NAMESPACE';
const outerEnv = () =>
  Object.fromEntries(Object.entries(process.env).filter(([key]) => key !== 'NODE_TEST_CONTEXT'));
if (process.env[INSIDE] === '1') pinsInNamespace();
else
  describe('FTP pins', () => {
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
        { encoding: 'utf8', env: { ...outerEnv(), [INSIDE]: '1' }, timeout: 120_000 },
      );
      assert.equal(inner.status, 0, `${inner.stdout}\n${inner.stderr}`);
      assert.match(inner.stdout, /^✔ FTP pins, with real mounts/m);
      assert.match(inner.stdout, /^ℹ fail 0$/m);
    });
  });

function pinsInNamespace() {
  describe('FTP pins, with real mounts', () => {
    const base = tempDir('berth-ftp-pins-');
    const roots = join(base, 'roots');
    const home = join(base, 'home', 'vera');
    const neighbour = join(base, 'home', 'bob', 'public_html');
    const commands: string[][] = [];
    const real = execRunner();
    const ctx = {
      linux: { ...linuxDefaults(), ftpRootDir: roots },
      live: true,
      path: (p: string) => p,
      runner: {
        run(argv: string[], options?: { input?: string }) {
          commands.push(argv);
          return real.run(argv, options);
        },
      },
    } as unknown as LinuxContext;
    const pins = ftpPins(ctx);
    const account = { user: 'vera', homedir: home } as Account;
    const ftp = { login: 'designer', directory: 'public_html/shop' } as FtpAccount;
    const target = join(roots, 'vera', 'designer');
    const mounted = () =>
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((line) => line.split(' ')[4] === target).length;
    const shop = join(home, 'public_html', 'shop');

    mkdirSync(shop, { recursive: true });
    mkdirSync(neighbour, { recursive: true });
    writeFileSync(join(shop, 'mine.txt'), 'mine\n');
    writeFileSync(join(neighbour, 'secret.txt'), 'bob\n');
    after(async () => {
      await pins.unpinAll('vera');
      rmSync(base, { recursive: true, force: true });
    });

    it('binds the directory opened without links, from its descriptor, at a path of root’s alone', async () => {
      await pins.pin(account, ftp);
      assert.equal(mounted(), 1);
      assert.deepEqual(readdirSync(target), ['mine.txt']);
      assert.equal(pins.state(account, ftp), 'pinned');
      assert.deepEqual(
        [statSync(target).ino, statSync(target).dev],
        [statSync(shop).ino, statSync(shop).dev],
      );
      assert.equal(statSync(roots).mode & 0o7777, 0o700);
      assert.equal(statSync(join(roots, 'vera')).mode & 0o7777, 0o700);
      // mount is given the descriptor, and does not look its path up again.
      const bind = commands.find((argv) => argv.includes('--bind'))!;
      assert.deepEqual(bind.slice(0, 3), ['/usr/bin/mount', '--no-canonicalize', '--bind']);
      assert.match(bind[3]!, new RegExp(`^/proc/${process.pid}/fd/\\d+$`));
      assert.equal(bind[4], target);
      // Pinning again changes nothing.
      await pins.pin(account, ftp);
      assert.equal(mounted(), 1);
    });

    it('renamed away and replaced by a link to another home: the pin stays, pinning again refuses the link', async () => {
      renameSync(shop, join(home, 'public_html', 'shop-old'));
      symlinkSync(neighbour, shop);
      assert.deepEqual(readdirSync(target), ['mine.txt']);
      assert.equal(pins.state(account, ftp), 'other');
      await assert.rejects(pins.pin(account, ftp), UnsafePath);
      // The login is left in an empty directory of root's, never in the link's target.
      assert.equal(mounted(), 0);
      assert.deepEqual(readdirSync(target), []);
      assert.equal(lstatSync(target).uid, 0);
      assert.equal(pins.state(account, ftp), 'missing');
    });

    it('a directory removed leaves the pin an empty deleted directory, where nothing can be made', async () => {
      rmSync(shop);
      mkdirSync(shop);
      await pins.pin(account, ftp);
      assert.equal(pins.state(account, ftp), 'pinned');
      rmSync(shop, { recursive: true });
      assert.deepEqual(readdirSync(target), []);
      assert.throws(() => writeFileSync(join(target, 'x.txt'), 'x\n'), { code: 'ENOENT' });
      assert.equal(existsSync(join(home, 'x.txt')), false);
    });

    it('a missing mount (a reboot) is found and pinned again; unpinning takes it and its directories away', async () => {
      mkdirSync(shop);
      await pins.pin(account, ftp);
      spawnSync('/usr/bin/umount', [target]);
      assert.equal(pins.state(account, ftp), 'missing');
      await pins.pin(account, ftp);
      assert.equal(pins.state(account, ftp), 'pinned');
      assert.deepEqual(pins.pinned('vera'), ['designer']);
      await pins.unpin('vera', 'designer');
      assert.equal(mounted(), 0);
      assert.equal(existsSync(target), false);
      assert.equal(existsSync(join(roots, 'vera')), false);
      // The customer's directory is untouched.
      assert.ok(statSync(shop).isDirectory());
    });

    it('doctor looks in Pure-FTPd’s mount namespace, as its logins see the pins', async () => {
      await pins.pin(account, ftp);
      const ftpd = join(base, 'pure-ftpd');
      copyFileSync('/usr/bin/sleep', ftpd);
      chmodSync(ftpd, 0o755);
      const started = async (child: ReturnType<typeof spawn>) => {
        for (let i = 0; i < 50; i++) {
          if (readFileSync(`/proc/${child.pid}/comm`, 'utf8').trim() === 'pure-ftpd') return;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        throw new Error('the stand-in for Pure-FTPd did not start');
      };
      // One in this namespace: the pin as it is here.
      const here = spawn(ftpd, ['30']);
      await started(here);
      assert.equal(pins.state(account, ftp, 'ftpd'), 'pinned');
      here.kill();
      await once(here, 'exit');
      // One in a namespace where another directory is mounted there: not its own, whatever this
      // namespace has.
      const away = spawn('/usr/bin/unshare', [
        '--mount',
        '--propagation',
        'private',
        '/bin/sh',
        '-c',
        'umount "$1" && mount --bind "$2" "$1" && exec "$3" 30',
        'sh',
        target,
        neighbour,
        ftpd,
      ]);
      try {
        await started(away);
        assert.equal(pins.state(account, ftp), 'pinned');
        // ('other' as that namespace has it; 'missing' should another sandbox's Pure-FTPd on this
        // machine, in a namespace without this test's mounts, be the one looked into.)
        assert.notEqual(pins.state(account, ftp, 'ftpd'), 'pinned');
      } finally {
        away.kill();
        await once(away, 'exit');
      }
      await pins.unpin('vera', 'designer');
    });

    it('a home that is a btrfs subvolume is pinned as any, and still goes once unpinned, copies of the pin elsewhere or not', async () => {
      const homes = join(base, 'btrfs');
      const image = join(base, 'homes.img');
      writeFileSync(image, '');
      truncateSync(image, 256 * 1024 * 1024);
      execFileSync('/usr/sbin/mkfs.btrfs', ['-q', '--', image], { stdio: 'pipe' });
      mkdirSync(homes);
      const device = execFileSync('/usr/sbin/losetup', ['--find', '--show', '--', image], {
        encoding: 'utf8',
      });
      execFileSync('/usr/bin/mount', ['-t', 'btrfs', '--', device.trim(), homes]);
      execFileSync('/usr/sbin/losetup', ['--detach', device.trim()]);
      try {
        const wren = { user: 'wren', homedir: join(homes, 'wren') } as Account;
        execFileSync('/usr/bin/btrfs', ['-q', 'subvolume', 'create', wren.homedir]);
        mkdirSync(join(wren.homedir, 'site'));
        writeFileSync(join(wren.homedir, 'site', 'index.html'), 'wren\n');
        const site = { login: 'site', directory: 'site' } as FtpAccount;
        await pins.pin(wren, site);
        assert.deepEqual(readdirSync(join(roots, 'wren', 'site')), ['index.html']);
        // A namespace made meanwhile (an account's PHP) holds a copy of the pin.
        const holder = spawn('/usr/bin/unshare', [
          '--mount',
          '--propagation',
          'private',
          '/usr/bin/sleep',
          '30',
        ]);
        try {
          await new Promise((resolve) => setTimeout(resolve, 300));
          await pins.unpinAll('wren');
          execFileSync('/usr/bin/btrfs', ['-q', 'subvolume', 'delete', wren.homedir]);
          assert.equal(existsSync(wren.homedir), false);
        } finally {
          holder.kill();
        }
      } finally {
        execFileSync('/usr/bin/umount', ['--lazy', '--', homes]);
      }
    });
  });
}
