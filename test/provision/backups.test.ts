// Backups on the linux driver, in a throwaway system root, with Debian's restic (CONTRACT §15): the
// repository and its password are root's alone; a backup is a job the server's worker runs, never
// the call; a restore gives exactly the snapshot's content for what was asked, as the account's own
// user, never through a link the holder planted and never outside the home; a removed account is
// made again, its password included, from its snapshot.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { setPortalPassword } from '../../src/auth/portal-password.ts';
import { backupCommand } from '../../src/cli/commands/backup.ts';
import { FLEET_PATHS } from '../../src/fleet/calls.ts';
import { signedHeaders } from '../../src/fleet/client.ts';
import { CLI } from '../../src/operations/audited.ts';
import { runDueBackups, startBackupWorker } from '../../src/operations/backup-jobs.ts';
import { inspect } from '../../src/operations/maintenance.ts';
import { findAccount, toRow } from '../../src/store/accounts.ts';
import { backupStatuses, findJob } from '../../src/store/backup-jobs.ts';
import { objectsOf, toObjectRows } from '../../src/store/objects.ts';
import { callForHolder, createAccount, createChild, createReseller, errorOf, forSuite } from '../helpers.ts';
import { get, HOLDER_PASSWORD, holderSession, type PanelHarness, postForm } from '../panel/pages.ts';
import { PORTAL_PASSWORD, get as portalGet, login as portalLogin } from '../portal/pages.ts';
import { linuxSetup } from './system-root.ts';

interface Snapshot {
  id: string;
  time: string;
  size: number;
}

describe('backups on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const home = (...path: string[]) => join(h.root, 'home/bella', ...path);
  const owner = () => {
    const line = readFileSync(join(h.root, 'etc/passwd'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('bella:'))!;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  };
  /** Writes a file of the account's own, as it would have written it. */
  const write = (path: string, content: string) => {
    const { uid, gid } = owner();
    const parts = path.split('/');
    for (let i = 1; i < parts.length; i++) {
      const dir = home(...parts.slice(0, i));
      if (!existsSync(dir)) {
        mkdirSync(dir);
        chownSync(dir, uid, gid);
      }
    }
    writeFileSync(home(path), content);
    chownSync(home(path), uid, gid);
  };
  const backup = async (user = 'bella') => {
    const reply = await h.call('backupacct', { user });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    const job = (reply.body.data as { job: string }).job;
    // The call queued it; the server's worker runs it.
    assert.equal((await findJob(h.services.store.db, job))?.state, 'queued');
    assert.equal(await runDueBackups(h.services), 1);
    const done = await findJob(h.services.store.db, job);
    assert.equal(done?.state, 'done', done?.error ?? '');
    return done!.snapshot!;
  };
  const list = async (user = 'bella') => {
    const reply = await h.call('listbackups', { user });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    return (reply.body.data as { snapshots: Snapshot[] }).snapshots;
  };
  const restore = (params: Record<string, string>) => h.call('restoreacct', { user: 'bella', ...params });
  let first = '';

  it('backupacct answers with a job at once; the job makes a snapshot tagged with the account', async () => {
    await createAccount(h, 'bella', { domain: 'bella.example' });
    write('public_html/index.html', 'first page\n');
    write('public_html/keep.txt', 'kept\n');
    first = await backup();
    const snapshots = await list();
    assert.equal(snapshots.length, 1);
    assert.equal(snapshots[0]!.id.slice(0, 8), first.slice(0, 8));
    assert.ok(snapshots[0]!.size >= 0);
    assert.ok(!Number.isNaN(Date.parse(snapshots[0]!.time)));
    const status = (await backupStatuses(h.services.store.db)).get('bella');
    assert.ok(status?.lastSuccess);
    assert.equal(status?.failuresSince, 0);
    const metrics = await h.services.metrics.render(h.services.store.db);
    assert.match(metrics, /^berth_backup_last_success_seconds\{user="bella"\} \d+$/m);
    assert.match(metrics, /^berth_backup_failures_total 0$/m);
  });

  it('keeps the repository, its password and its cache root’s alone', () => {
    const mode = (path: string) => statSync(join(h.dataDir, path)).mode & 0o777;
    assert.equal(mode('backup-password'), 0o600);
    assert.equal(statSync(join(h.dataDir, 'backup-password')).uid, 0);
    assert.equal(mode('backups'), 0o700);
    assert.equal(mode('backup-cache'), 0o700);
    assert.ok(existsSync(join(h.dataDir, 'backups/config')));
    // The password never reached a command line: restic is given the file's name.
    const secret = readFileSync(join(h.dataDir, 'backup-password'), 'utf8');
    assert.ok(!h.commands.some((argv) => argv.join(' ').includes(secret)));
  });

  it('a second backupacct while one waits answers the same job', async () => {
    const one = await h.call('backupacct', { user: 'bella' });
    const two = await h.call('backupacct', { user: 'bella' });
    assert.deepEqual(one.body.data, two.body.data);
    assert.equal(await runDueBackups(h.services), 1);
    assert.equal((await list()).length, 2);
  });

  it('restores a deleted file, and a path gives exactly the snapshot’s content', async () => {
    rmSync(home('public_html/index.html'));
    write('public_html/new.txt', 'made after the snapshot\n');
    const reply = await restore({ snapshot: first.slice(0, 8), what: 'files', path: 'public_html' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readFileSync(home('public_html/index.html'), 'utf8'), 'first page\n');
    assert.equal(existsSync(home('public_html/new.txt')), false);
    assert.equal(lstatSync(home('public_html/index.html')).uid, owner().uid);
  });

  it('restoring one file leaves the rest of the home alone', async () => {
    write('public_html/keep.txt', 'changed\n');
    write('public_html/other.txt', 'other\n');
    const reply = await restore({ snapshot: first, what: 'files', path: 'public_html/keep.txt' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readFileSync(home('public_html/keep.txt'), 'utf8'), 'kept\n');
    assert.equal(readFileSync(home('public_html/other.txt'), 'utf8'), 'other\n');
  });

  it('a link the holder planted on the way refuses the restore and nothing outside is written', async () => {
    const outside = join(h.root, 'srv-outside');
    mkdirSync(outside, { recursive: true });
    rmSync(home('public_html'), { recursive: true });
    symlinkSync(outside, home('public_html'));
    const reply = await restore({ snapshot: first, what: 'files', path: 'public_html/index.html' });
    assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'path' });
    assert.equal(existsSync(join(outside, 'index.html')), false);
    // Restoring the link's own path replaces the link, never following it.
    const whole = await restore({ snapshot: first, what: 'files', path: 'public_html' });
    assert.equal(whole.statusCode, 200, JSON.stringify(whole.body));
    assert.ok(lstatSync(home('public_html')).isDirectory());
    assert.equal(readFileSync(home('public_html/index.html'), 'utf8'), 'first page\n');
    assert.deepEqual(readdir(outside), []);
    // What root keeps in the home (its logs directory) is never restored into the account's hands.
    const logs = await restore({ snapshot: first, what: 'files', path: 'logs' });
    assert.deepEqual(errorOf(logs), { status: 400, code: 'invalid_parameter', param: 'path' });
    assert.equal(statSync(home('logs')).uid, 0);
  });

  it('a link inside the snapshot is restored as a link, and nothing is written through it', async () => {
    const target = join(h.root, 'etc-victim');
    mkdirSync(target, { recursive: true });
    symlinkSync(target, home('public_html/x'));
    const snapshot = await backup();
    rmSync(home('public_html/x'));
    mkdirSync(home('public_html/x'));
    const reply = await restore({ snapshot, what: 'files' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readlinkSync(home('public_html/x')), target);
    assert.deepEqual(readdir(target), []);
  });

  it('mail: an emptied mailbox comes back, and the rest of the home is left alone', async () => {
    const added = await callForHolder(h, 'bella', 'add_mailbox', {
      email: 'info@bella.example',
      password: 'mailbox-secret-1',
    });
    assert.ok(added);
    const maildir = 'mail/bella.example/info/Maildir';
    write(`${maildir}/cur/1.mail:2,S`, 'Subject: kept\n\nhello\n');
    const snapshot = await backup();
    rmSync(home(`${maildir}/cur/1.mail:2,S`));
    write('public_html/after.txt', 'after\n');
    const reply = await restore({ snapshot, what: 'mail' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readFileSync(home(`${maildir}/cur/1.mail:2,S`), 'utf8'), 'Subject: kept\n\nhello\n');
    assert.ok(existsSync(home('public_html/after.txt')));
    // The holder's own restore of one mailbox.
    rmSync(home(`${maildir}/cur/1.mail:2,S`));
    await callForHolder(h, 'bella', 'restore_backup', {
      snapshot,
      what: 'mail',
      email: 'info@bella.example',
    });
    assert.ok(existsSync(home(`${maildir}/cur/1.mail:2,S`)));
  });

  it('a removed account is made again from its snapshot, its password and every object included', async () => {
    await callForHolder(h, 'bella', 'add_ftp_account', {
      login: 'designer',
      password: 'Design-pass-1234',
      directory: 'public_html',
    });
    await callForHolder(h, 'bella', 'add_mailing_list', {
      email: 'news@bella.example',
      owner: 'a@example.org',
    });
    const snapshot = await backup();
    const hash = readFileSync(join(h.root, 'etc/shadow'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('bella:'))!
      .split(':')[1];
    assert.equal((await h.call('removeacct', { user: 'bella' })).statusCode, 200);
    assert.equal(existsSync(home()), false);
    // Its snapshots are kept.
    assert.ok((await h.services.driver.backups!.snapshots('bella')).length >= 4);
    const reply = await restore({ snapshot });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal((await h.call('accountsummary', { user: 'bella' })).statusCode, 200);
    assert.equal(readFileSync(home('public_html/index.html'), 'utf8'), 'first page\n');
    assert.ok(existsSync(home('mail/bella.example/info/Maildir/cur/1.mail:2,S')));
    const again = readFileSync(join(h.root, 'etc/shadow'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('bella:'))!
      .split(':')[1];
    assert.equal(again, hash);
    const mailboxes = (await callForHolder(h, 'bella', 'list_mailboxes')).data as { email: string }[];
    assert.deepEqual(
      mailboxes.map((m) => m.email),
      ['info@bella.example'],
    );
    // Its FTP account, with its password's hash, and its mailing list, in the store and the system.
    const ftp = (await callForHolder(h, 'bella', 'list_ftp_accounts')).data as { login: string }[];
    assert.deepEqual(
      ftp.map((f) => f.login),
      ['designer@bella.example'],
    );
    assert.match(
      readFileSync(join(h.root, 'etc/pure-ftpd/berth.passwd'), 'utf8'),
      /^designer@bella\.example:\$6\$/m,
    );
    const lists = (await callForHolder(h, 'bella', 'list_mailing_lists')).data as { email: string }[];
    assert.deepEqual(
      lists.map((l) => l.email),
      ['news@bella.example'],
    );
    assert.ok(existsSync(join(h.root, 'var/spool/berth-lists/bella.example_news/control/listaddress')));
  });

  it('a failing backup is retried later, counted, and berth doctor says so until one succeeds', async () => {
    const passwordFile = join(h.dataDir, 'backup-password');
    const password = readFileSync(passwordFile, 'utf8');
    writeFileSync(passwordFile, 'not-the-password');
    try {
      const job = ((await h.call('backupacct', { user: 'bella' })).body.data as { job: string }).job;
      await runDueBackups(h.services);
      const failed = await findJob(h.services.store.db, job);
      assert.equal(failed?.state, 'queued');
      assert.equal(failed?.attempts, 1);
      assert.ok(failed!.nextAttempt.getTime() > Date.now() + 30_000, 'retried after a minute, not at once');
      assert.ok(failed?.error);
      // Not due yet: nothing runs.
      assert.equal(await runDueBackups(h.services), 0);
      const found = await inspect(h.services);
      assert.ok(
        found.some((line) => /^bella: backup failing \(1 failed attempt/.test(line)),
        found.join('\n'),
      );
      assert.match(await h.services.metrics.render(h.services.store.db), /^berth_backup_failures_total 1$/m);
    } finally {
      writeFileSync(passwordFile, password, { mode: 0o600 });
    }
    await h.services.store.db
      .updateTable('backup_jobs')
      .set({ next_attempt: new Date(0).toISOString() })
      .where('user', '=', 'bella')
      .where('active_user', '=', 'bella')
      .execute();
    assert.equal(await runDueBackups(h.services), 1);
    assert.deepEqual(
      (await inspect(h.services)).filter((line) => line.startsWith('bella:')),
      [],
    );
  });

  it('berth backup list and restore work from the command line', async () => {
    const out: string[] = [];
    const io = { stdin: async () => '', out: (text: string) => out.push(text) };
    const flags = {
      'data-dir': h.dataDir,
      driver: 'linux',
      'system-root': h.root,
      node: h.services.config.nodeName,
    };
    assert.equal(await backupCommand.run(['list', 'bella'], flags, io), 0);
    assert.match(out.join(''), /^ID +TIME +SIZE \(MB\) +SERVER$/m);
    // Each snapshot names the server whose repository holds it: this one.
    assert.match(out.join(''), new RegExp(`^[0-9a-f]{8} .* ${h.services.config.nodeName}$`, 'm'));
    rmSync(home('public_html/index.html'));
    assert.equal(
      await backupCommand.run(['restore', 'bella'], { ...flags, path: 'public_html/index.html' }, io),
      0,
    );
    assert.match(out.at(-1)!, /^Restored public_html\/index\.html of bella from snapshot [0-9a-f]{8}\n$/);
    assert.equal(readFileSync(home('public_html/index.html'), 'utf8'), 'first page\n');
  });

  it('the panel lists the backups, restores one path, and downloads the home alone as .tar.gz', async () => {
    await createAccount(h, 'dora', { domain: 'dora.example', password: HOLDER_PASSWORD });
    const doraHome = join(h.root, 'home/dora');
    const { uid, gid } = statSync(doraHome);
    mkdirSync(join(doraHome, 'public_html'), { recursive: true });
    writeFileSync(join(doraHome, 'public_html/page.html'), 'dora\n');
    chownSync(join(doraHome, 'public_html/page.html'), uid, gid);
    // A link to a neighbour's home travels as a link, never as what it points to.
    symlinkSync(home(), join(doraHome, 'public_html/bella'));
    const snapshot = await backup('dora');
    const panel = h as unknown as PanelHarness;
    const dora = await holderSession(panel, 'dora');
    const page = await get(panel, '/backups', dora.cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /Download \(\.tar\.gz\)/);
    assert.ok(page.body.includes(`/backups/download?snapshot=${snapshot}`));
    rmSync(join(doraHome, 'public_html/page.html'));
    const restored = await postForm(
      panel,
      '/backups/restore',
      { _csrf: dora.csrf, snapshot, what: 'files', path: 'public_html/page.html' },
      dora.cookie,
    );
    assert.equal(restored.status, 303);
    assert.equal(readFileSync(join(doraHome, 'public_html/page.html'), 'utf8'), 'dora\n');
    const download = await h.customer.inject({
      method: 'GET',
      url: `/backups/download?snapshot=${snapshot}`,
      headers: { cookie: dora.cookie },
    });
    assert.equal(download.statusCode, 200);
    assert.equal(download.headers['content-type'], 'application/gzip');
    const listing = execFileSync('/usr/bin/tar', ['-tvz'], { input: download.rawPayload }).toString();
    const names = listing.trim().split('\n');
    assert.ok(
      names.some((line) => line.endsWith('public_html/page.html')),
      listing,
    );
    assert.ok(
      names.every((line) => line.includes('home/dora/')),
      listing,
    );
    assert.ok(
      names.some((line) => / -> .*home\/bella$/.test(line)),
      listing,
    );
    // What the archive holds is dora's alone: the link to bella's home is a link, not her files.
    const contents = execFileSync('/usr/bin/tar', ['-xzO'], { input: download.rawPayload }).toString();
    assert.match(contents, /^dora$/m);
    assert.doesNotMatch(contents, /first page/);
    // Another account's snapshot is no download of dora's.
    const theirs = (await h.services.driver.backups!.snapshots('bella')).at(-1)!.id;
    const refused = await h.customer.inject({
      method: 'GET',
      url: `/backups/download?snapshot=${theirs}`,
      headers: { cookie: dora.cookie },
    });
    assert.equal(refused.statusCode, 404);
  });

  it('the portal shows each account’s last backup, and its failures', async () => {
    await setPortalPassword(h.services, PORTAL_PASSWORD, CLI);
    const { cookie } = await portalLogin(h);
    const list = await portalGet(h, '/accounts', cookie);
    assert.equal(list.status, 200);
    assert.match(list.body, /<th[^>]*>Last backup<\/th>/);
    assert.match(list.body, /id="account-dora"[\s\S]*?class="backup"[\s\S]*?<span>\d{4}-\d\d-\d\d \d\d:\d\d/);
    const page = await portalGet(h, '/accounts/bella', cookie);
    assert.match(page.body, /<dt>Last backup<\/dt>/);
  });

  it('answers another server of the fleet about its backups, signed alone, and restores for it', async () => {
    await h.services.fleet.ensureSecret();
    const secret = (await h.services.fleet.secret())!;
    const to = { from: 'web2', to: h.services.config.nodeName };
    const send = (path: string, body: object, sign = true) => {
      const text = JSON.stringify(body);
      return h.request({
        url: path,
        headers: {
          'content-type': 'application/json',
          ...(sign ? signedHeaders(secret, to, path, text) : {}),
        },
        body: text,
      });
    };
    assert.equal(
      (await send(FLEET_PATHS.backups, { action: 'snapshots', user: 'dora' }, false)).statusCode,
      401,
    );
    const listed = await send(FLEET_PATHS.backups, { action: 'snapshots', user: 'dora' });
    assert.equal(listed.statusCode, 200);
    const snapshots = (listed.body as unknown as { snapshots: { id: string }[] }).snapshots;
    assert.equal(snapshots.length, 1);
    const bad = await send(FLEET_PATHS.backups, { action: 'snapshots', user: '../etc' });
    assert.equal(bad.statusCode, 400);
    const dora = (await findAccount(h.services.store.db, 'dora'))!;
    rmSync(join(h.root, 'home/dora/public_html/page.html'));
    const restored = await send(FLEET_PATHS.backups, {
      action: 'restore',
      user: 'dora',
      account: toRow(dora),
      objects: toObjectRows('dora', await objectsOf(h.services.store.db, 'dora')),
      snapshot: snapshots[0]!.id,
      request: { what: 'files', path: ['public_html', 'page.html'] },
    });
    assert.equal(restored.statusCode, 200, JSON.stringify(restored.body));
    assert.equal(readFileSync(join(h.root, 'home/dora/public_html/page.html'), 'utf8'), 'dora\n');
    const refused = await send(FLEET_PATHS.backups, {
      action: 'restore',
      user: 'dora',
      account: toRow(dora),
      objects: toObjectRows('dora', await objectsOf(h.services.store.db, 'dora')),
      snapshot: snapshots[0]!.id,
      request: { what: 'files', path: ['public_html', 'bella', 'x'] },
    });
    assert.equal(refused.statusCode, 422);
    assert.equal((refused.body as unknown as { param: string }).param, 'path');
  });

  it("a removed account's snapshots are its reseller's to list and restore, and no other reseller's", async () => {
    await createReseller(h, 'res');
    await createReseller(h, 'other');
    await createChild(h, 'res', 'rita');
    const snapshot = await backup('rita');
    assert.equal((await h.callAs('res', 'removeacct', { user: 'rita' })).statusCode, 200);
    const theirs = await h.callAs('other', 'listbackups', { user: 'rita' });
    assert.deepEqual(errorOf(theirs), { status: 400, code: 'account_not_found', param: 'user' });
    const taken = await h.callAs('other', 'restoreacct', { user: 'rita', snapshot });
    assert.deepEqual(errorOf(taken), { status: 400, code: 'account_not_found', param: 'user' });
    const listed = await h.callAs('res', 'listbackups', { user: 'rita' });
    assert.equal(listed.statusCode, 200, JSON.stringify(listed.body));
    const restored = await h.callAs('res', 'restoreacct', { user: 'rita', snapshot });
    assert.equal(restored.statusCode, 200, JSON.stringify(restored.body));
    assert.equal(
      ((await h.call('accountsummary', { user: 'rita' })).body.data as { acct: { owner: string } }).acct
        .owner,
      'res',
    );
  });

  it('refuses a snapshot of another account, and an unknown one, as not found', async () => {
    await createAccount(h, 'carla', { domain: 'carla.example' });
    const theirs = await backup('carla');
    const reply = await restore({ snapshot: theirs, what: 'files' });
    assert.deepEqual(errorOf(reply), { status: 400, code: 'object_not_found', param: 'snapshot' });
    const unknown = await restore({ snapshot: 'deadbeef', what: 'files' });
    assert.deepEqual(errorOf(unknown), { status: 400, code: 'object_not_found', param: 'snapshot' });
  });

  it("a shell account's own home in its jail is restored with its files", async () => {
    await createAccount(h, 'sheila', { domain: 'sheila.example', shell: '1' });
    const shellHome = join(h.root, 'home/sheila/home/sheila');
    assert.ok(existsSync(shellHome), 'the jail has the shell’s home');
    const { uid, gid } = statSync(shellHome);
    writeFileSync(join(shellHome, '.profile'), 'kept\n');
    chownSync(join(shellHome, '.profile'), uid, gid);
    const snapshot = await backup('sheila');
    rmSync(join(shellHome, '.profile'));
    writeFileSync(join(shellHome, 'later'), 'later\n');
    const reply = await h.call('restoreacct', { user: 'sheila', snapshot, what: 'files' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readFileSync(join(shellHome, '.profile'), 'utf8'), 'kept\n');
    assert.equal(existsSync(join(shellHome, 'later')), false);
    assert.equal(statSync(shellHome).uid, uid);
    // The jail's system directories are root's as before, and not in the snapshot.
    assert.equal(statSync(join(h.root, 'home/sheila/usr')).uid, 0);
  });

  it('the schedule queues every account of the server; retention then forgets what is not kept', async () => {
    const { services } = h;
    await createAccount(h, 'gone', { domain: 'gone.example' });
    await backup('gone');
    assert.equal((await h.call('removeacct', { user: 'gone' })).statusCode, 200);
    const backups = services.driver.backups!;
    assert.ok((await backups.snapshots('bella')).length > 2);
    const config = services.config.backup;
    const kept = { ...config };
    Object.assign(config, { schedule: '0 3 * * *', keep: { last: 2 }, keepRemovedDays: 1 });
    const realNow = services.now;
    let now = new Date(Date.now() + 2 * 24 * 60 * 60_000);
    now.setHours(2, 59, 30, 0);
    services.now = () => now;
    const worker = startBackupWorker(services);
    try {
      now = new Date(now.getTime() + 60_000);
      const accounts = ['bella', 'carla', 'dora', 'rita', 'sheila'];
      // The round's jobs (the store), then retention (the removed account's snapshots go last).
      for (let i = 0; i < 120; i++) {
        const done = await services.store.db
          .selectFrom('backup_jobs')
          .select('id')
          .where('reason', '=', 'schedule')
          .where('state', '=', 'done')
          .execute();
        if (done.length === accounts.length) break;
        await sleep(1000);
      }
      for (let i = 0; i < 60 && (await backups.snapshots('gone')).length > 0; i++) await sleep(2000);
      const counts = await Promise.all(accounts.map(async (user) => (await backups.snapshots(user)).length));
      assert.deepEqual(counts, [2, 2, 2, 2, 2]);
      // A removed account's snapshots, past backup_keep_removed, are gone with it.
      assert.deepEqual(await backups.snapshots('gone'), []);
    } finally {
      await worker.close();
      services.now = realNow;
      Object.assign(config, kept);
    }
  });
});

function readdir(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}
