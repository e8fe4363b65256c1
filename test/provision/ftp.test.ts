// FTP accounts on the linux driver, in a throwaway system root (CONTRACT §14): each account's
// virtual users in a root-only file of pure-pw's passwd format (the store's hash, the account's
// uid, the directory as chroot), joined and compiled by the real pure-pw into Pure-FTPd's PureDB;
// the directory made without following a link and pinned where the login lands (a directory of
// root's below root's own, the PureDB home: the bind mount itself is the sandbox's test, a live
// system's); suspension takes the logins away and unsuspension
// brings them back; a failing step puts every file back; removal removes them; doctor finds drift.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { inspect } from '../../src/operations/maintenance.ts';
import { runSteps } from '../../src/provision/driver.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { ftpAccountsOf } from '../../src/store/ftp-accounts.ts';
import { objectsOf } from '../../src/store/objects.ts';
import { callForHolder, createAccount, forSuite, refused } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

describe('FTP accounts on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const mode = (path: string) => statSync(file(path)).mode & 0o7777;
  const add = (params: Record<string, string>) => callForHolder(h, 'vera', 'add_ftp_account', params);
  const users = 'etc/berth/ftp/vera';
  /** The logins pure-pw finds in the joined file, each with its directory. */
  const listed = () =>
    execFileSync('/usr/bin/pure-pw', ['list'], {
      encoding: 'utf8',
      env: { PURE_PASSWDFILE: file('etc/pure-ftpd/berth.passwd') },
    })
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split('\t').slice(0, 2).join(' '));

  it("writes Pure-FTPd's configuration: explicit TLS required, PureDB and PAM, everyone chrooted", async () => {
    await createAccount(h, 'vera', { domain: 'vera.example' });
    const config = read('etc/pure-ftpd/berth.conf');
    assert.doesNotMatch(config, /\{\{/);
    for (const line of [
      /^TLS\s+3$/m,
      /^ChrootEveryone\s+yes$/m,
      /^NoAnonymous\s+yes$/m,
      /^PureDB\s+\/etc\/pure-ftpd\/berth\.pdb$/m,
      /^PAMAuthentication\s+yes$/m,
      /^CertFile\s+\/etc\/berth\/certs\/host\/certificate\.pem$/m,
      /^Bind\s+,21$/m,
      /^PassivePortRange\s+30000 30099$/m,
    ])
      assert.match(config, line);
    assert.equal(mode('etc/berth/ftp'), 0o700);
    // PAM lets in the accounts alone (whatever their shell), and moves each session into its group.
    const pam = read('etc/pam.d/pure-ftpd');
    assert.match(pam, /^auth\s+requisite\s+pam_succeed_if\.so quiet user ingroup berth-sftp$/m);
    assert.match(pam, /^session\s+required\s+pam_exec\.so quiet \/etc\/berth\/account-session group$/m);
    assert.doesNotMatch(pam, /pam_shells/);
    // No FTP account, no file; the database exists (empty) for Pure-FTPd to read.
    assert.equal(existsSync(file(users)), false);
    assert.equal(mode('etc/pure-ftpd/berth.pdb'), 0o600);
  });

  it('add_ftp_account writes a virtual user of the account’s uid, chrooted to its directory, made without links', async () => {
    const uid = Number(read('etc/passwd').match(/^vera:x:(\d+):/m)![1]);
    await add({ login: 'designer', password: 'Str0ng-Secret', directory: 'public_html/shop', quota: '100' });
    const [stored] = await ftpAccountsOf(h.services.store.db, 'vera');
    assert.equal(mode(users), 0o600);
    assert.equal(
      read(users),
      `designer@vera.example:${stored!.passwordHash}:${uid}:${uid}::/var/lib/berth/ftp-roots/vera/designer/./:::::::104857600:::::\n`,
    );
    assert.equal(read('etc/pure-ftpd/berth.passwd'), read(users));
    assert.deepEqual(listed(), ['designer@vera.example /var/lib/berth/ftp-roots/vera/designer/./']);
    // Where the login lands: root's, empty until the directory is bound on it; above it root's alone.
    const pin = lstatSync(file('var/lib/berth/ftp-roots/vera/designer'));
    assert.deepEqual([pin.isDirectory(), pin.uid, pin.mode & 0o7777], [true, 0, 0o755]);
    assert.equal(mode('var/lib/berth/ftp-roots/vera'), 0o700);
    assert.equal(mode('var/lib/berth/ftp-roots'), 0o700);
    assert.deepEqual(readdirSync(file('var/lib/berth/ftp-roots/vera/designer')), []);
    const shown = execFileSync(
      '/usr/bin/pure-pw',
      ['show', 'designer@vera.example', '-f', file('etc/pure-ftpd/berth.passwd')],
      { encoding: 'utf8' },
    );
    assert.match(shown, /^Max size\s+: 100 Mb/m);
    const made = statSync(file('home/vera/public_html/shop'));
    assert.equal(made.uid, uid);
    assert.equal(made.mode & 0o7777, 0o750);
    // No password reached a command line or standard input.
    assert.ok(!h.commands.flat().some((arg) => arg.includes('Str0ng-Secret')));
    assert.ok(!h.inputs.some((input) => input.includes('Str0ng-Secret')));
    await add({ login: 'backup', password: 'An0ther-Secret' });
    assert.deepEqual(listed(), [
      'backup@vera.example /var/lib/berth/ftp-roots/vera/backup/./',
      'designer@vera.example /var/lib/berth/ftp-roots/vera/designer/./',
    ]);
  });

  it('a directory through a link the account planted is 400 invalid_parameter, never followed', async () => {
    symlinkSync('/etc', file('home/vera/public_html/away'));
    const answer = await refused(
      add({ login: 'sneaky', password: 'Str0ng-Secret', directory: 'public_html/away/x' }),
    );
    assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'directory']);
    assert.match(answer.info, /symbolic link/);
    assert.equal(existsSync(file('etc/x')), false);
    assert.ok(lstatSync(file('home/vera/public_html/away')).isSymbolicLink());
    assert.equal((await ftpAccountsOf(h.services.store.db, 'vera')).length, 2);
    assert.ok(!read(users).includes('sneaky'));
    assert.equal(existsSync(file('var/lib/berth/ftp-roots/vera/sneaky')), false);
  });

  it('a failing step puts the files back and adds no login; the directory it made goes again', async () => {
    const before = [read(users), read('etc/pure-ftpd/berth.passwd')];
    h.failAt.step = 'FTP users';
    try {
      const error = (await add({ login: 'late', password: 'Str0ng-Secret', directory: 'late/deep' }).catch(
        (e) => e,
      )) as ApiError;
      assert.equal(error.code, 'provisioning_failed');
    } finally {
      h.failAt.step = null;
    }
    assert.deepEqual([read(users), read('etc/pure-ftpd/berth.passwd')], before);
    assert.equal(existsSync(file('home/vera/late')), false);
    // Its pin went with it.
    assert.equal(existsSync(file('var/lib/berth/ftp-roots/vera/late')), false);
    assert.equal((await ftpAccountsOf(h.services.store.db, 'vera')).length, 2);
  });

  it('change_ftp_password writes the new hash; suspension takes the logins away, unsuspension brings them back', async () => {
    await callForHolder(h, 'vera', 'change_ftp_password', { login: 'backup', password: 'N3w-Str0ng-Secret' });
    const backup = (await ftpAccountsOf(h.services.store.db, 'vera')).find((f) => f.login === 'backup')!;
    assert.ok(read(users).includes(`backup@vera.example:${backup.passwordHash}:`));
    assert.equal((await h.call('suspendacct', { user: 'vera', reason: 'unpaid' })).statusCode, 200);
    assert.equal(existsSync(file(users)), false);
    assert.deepEqual(listed(), []);
    assert.equal((await h.call('unsuspendacct', { user: 'vera' })).statusCode, 200);
    assert.equal(listed().length, 2);
  });

  it('berth doctor finds a login the store does not have, a suspended account’s logins, files of no account and a stale database', async () => {
    assert.deepEqual(await inspect(h.services), []);
    const kept = read(users);
    writeFileSync(file(users), `${kept}intruder@vera.example:$6$x$y:0:0::/./:::::::::::::\n`, {
      mode: 0o600,
    });
    writeFileSync(file('etc/berth/ftp/ghost'), 'ghost@ghost.example:$6$x$y:1:1::/./:::::::::::::\n');
    try {
      const found = await inspect(h.services);
      assert.ok(
        found.some((d) => /^vera: its FTP users differ from the store's/.test(d)),
        found.join('\n'),
      );
      assert.ok(
        found.some((d) => /^ghost: FTP users \/etc\/berth\/ftp\/ghost with no account/.test(d)),
        found.join('\n'),
      );
      assert.ok(
        found.some((d) => /berth\.passwd is not the accounts' FTP users joined/.test(d)),
        found.join('\n'),
      );
    } finally {
      rmSync(file('etc/berth/ftp/ghost'));
      writeFileSync(file(users), kept, { mode: 0o600 });
    }
    // The joined file rewritten by hand, the database not: doctor sees the database is stale.
    writeFileSync(file('etc/pure-ftpd/berth.passwd'), kept, { mode: 0o600 });
    assert.deepEqual(await inspect(h.services), []);
    writeFileSync(file('etc/pure-ftpd/berth.passwd'), '', { mode: 0o600 });
    writeFileSync(file('etc/berth/ftp/vera'), '', { mode: 0o600 });
    const stale = await inspect(h.services);
    assert.ok(
      stale.some((d) => /berth\.pdb is not \/etc\/pure-ftpd\/berth\.passwd compiled/.test(d)),
      stale.join('\n'),
    );
    // reconcile (crash recovery) writes both again from the store.
    writeFileSync(file(users), kept, { mode: 0o600 });
    await h.services.driver.reconcile?.(
      (await findAccount(h.services.store.db, 'vera'))!,
      await objectsOf(h.services.store.db, 'vera'),
    );
    assert.deepEqual(await inspect(h.services), []);
    // A pin gone (a reboot, on a live system: the mount) and one of no FTP account.
    rmdirSync(file('var/lib/berth/ftp-roots/vera/backup'));
    mkdirSync(file('var/lib/berth/ftp-roots/vera/stray'));
    mkdirSync(file('var/lib/berth/ftp-roots/ghost'));
    const pins = await inspect(h.services);
    assert.ok(
      pins.some((d) => /^vera: FTP account backup is not pinned: its login sees an empty directory/.test(d)),
      pins.join('\n'),
    );
    assert.ok(
      pins.some((d) => /^vera: FTP root stray pinned for no FTP account/.test(d)),
      pins.join('\n'),
    );
    assert.ok(
      pins.some((d) => d === 'ghost: FTP roots /var/lib/berth/ftp-roots/ghost with no account in the store'),
      pins.join('\n'),
    );
    assert.ok(
      pins.some((d) => d.includes('empty directory /var/lib/berth/ftp-roots/vera/backup (the home)')),
      pins.join('\n'),
    );
    rmdirSync(file('var/lib/berth/ftp-roots/ghost'));
    // Berth's start pins every FTP account again, and takes away what no login has; logins that
    // an earlier Berth chrooted below the home itself are written again, to their pins.
    const current = read(users);
    writeFileSync(file(users), current.replace('/var/lib/berth/ftp-roots/vera/backup/./', '/home/vera/./'));
    await h.services.driver.resume?.([(await findAccount(h.services.store.db, 'vera'))!], (user) =>
      objectsOf(h.services.store.db, user),
    );
    assert.deepEqual(await inspect(h.services), []);
    assert.equal(existsSync(file('var/lib/berth/ftp-roots/vera/stray')), false);
    assert.equal(read(users), current);
    assert.ok(listed().includes('backup@vera.example /var/lib/berth/ftp-roots/vera/backup/./'));
    // A configuration changed by hand (TLS no longer required) is Berth's no more.
    const config = read('etc/pure-ftpd/berth.conf');
    writeFileSync(file('etc/pure-ftpd/berth.conf'), config.replace(/^TLS\s+3$/m, 'TLS 0'));
    try {
      const found = await inspect(h.services);
      assert.ok(
        found.some((d) => /berth\.conf is not Berth's/.test(d)),
        found.join('\n'),
      );
    } finally {
      writeFileSync(file('etc/pure-ftpd/berth.conf'), config);
    }
  });

  it('remove_ftp_account takes the login out; removeacct removes every FTP user of the account', async () => {
    await callForHolder(h, 'vera', 'remove_ftp_account', { login: 'designer@vera.example' });
    assert.deepEqual(listed(), ['backup@vera.example /var/lib/berth/ftp-roots/vera/backup/./']);
    assert.equal(existsSync(file('var/lib/berth/ftp-roots/vera/designer')), false);
    // Its files stay: they are the account's.
    assert.ok(existsSync(file('home/vera/public_html/shop')));
    // A removal that fails on the way pins the FTP accounts again, and their logins are back.
    h.failAt.step = 'system user';
    try {
      assert.notEqual((await h.call('removeacct', { user: 'vera' })).statusCode, 200);
    } finally {
      h.failAt.step = null;
    }
    assert.ok(lstatSync(file('var/lib/berth/ftp-roots/vera/backup')).isDirectory());
    assert.deepEqual(listed(), ['backup@vera.example /var/lib/berth/ftp-roots/vera/backup/./']);
    assert.equal((await h.call('removeacct', { user: 'vera' })).statusCode, 200);
    assert.equal(existsSync(file(users)), false);
    assert.equal(existsSync(file('var/lib/berth/ftp-roots/vera')), false);
    assert.deepEqual(listed(), []);
    assert.deepEqual(await inspect(h.services), []);
  });
});

describe('FTP accounts moving to another server', () => {
  const from = forSuite(linuxSetup);
  const to = forSuite(linuxSetup);

  it('the new server writes the same virtual users from the store’s hashes, and makes their directories', async () => {
    await createAccount(from, 'wren', { domain: 'wren.example' });
    await callForHolder(from, 'wren', 'add_ftp_account', {
      login: 'designer',
      password: 'Str0ng-Secret',
      directory: 'public_html/site',
      quota: '50',
    });
    const { db } = from.services.store;
    const account = (await findAccount(db, 'wren'))!;
    const objects = await objectsOf(db, 'wren');
    const exported = (await from.services.driver.exportAccount(account))!;
    const moved = { ...exported, files: async () => from.services.driver.accountFiles(account) };
    await runSteps(to.services.driver.receiveAccount(account, moved, objects), []);
    const lines = (root: string) => readFileSync(join(root, 'etc/berth/ftp/wren'), 'utf8');
    assert.equal(lines(to.root), lines(from.root));
    assert.ok(lines(to.root).startsWith(`designer@wren.example:${objects.ftp_accounts[0]!.passwordHash}:`));
    assert.equal(readFileSync(join(to.root, 'etc/pure-ftpd/berth.passwd'), 'utf8'), lines(from.root));
    assert.ok(statSync(join(to.root, 'home/wren/public_html/site')).isDirectory());
    assert.ok(statSync(join(to.root, 'var/lib/berth/ftp-roots/wren/designer')).isDirectory());
  });
});
