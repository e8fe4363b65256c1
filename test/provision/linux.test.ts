// The linux driver against the real tools (useradd --prefix, nginx -t, named-checkzone) in a
// throwaway system root, checked against the files each operation must leave.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPublicKey, createSign, createVerify, X509Certificate } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setPortalPassword } from '../../src/auth/portal-password.ts';
import { verifySha512Crypt } from '../../src/auth/sha512-crypt.js';
import { CLI } from '../../src/operations/audited.ts';
import { inspect, recoverInterruptedCalls, refreshUsage } from '../../src/operations/maintenance.ts';
import { StepFailed } from '../../src/provision/driver.ts';
import { findSystemUser, shadowPassword } from '../../src/provision/linux/passwd.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { passwordHashOf } from '../../src/store/holder-credentials.ts';
import { assertRefused, callCreateacct, createAccount, forSuite, summary } from '../helpers.ts';
import { get, login, PORTAL_PASSWORD } from '../portal/pages.ts';
import { berth } from '../process.ts';
import {
  dovecotRows,
  journalUnfinished,
  type LinuxHarness,
  linuxSetup,
  nginxAccepts,
  postfixTable,
} from './system-root.ts';

/** Every file below the root with its content, to prove that a failed call leaves no trace. */
function snapshot(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        files.set(`${path}/`, '');
        walk(path);
      } else if (entry.isSymbolicLink()) files.set(path, `-> ${readlinkSync(path)}`);
      // Dovecot's database by its rows (its log and index with it): a commit undone moves its
      // counters all the same.
      else if (path === join(root, 'etc/dovecot/berth/mail.sqlite'))
        files.set(path, dovecotRows(root, 'logins') + dovecotRows(root, 'users'));
      else if (/\/mail\.sqlite-(wal|shm)$/.test(path)) continue;
      else files.set(path, readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  // The shadow tools keep backups of the files they change (passwd-, shadow-, …), and chpasswd
  // locks the user database with /etc/.pwd.lock (which a real system always has).
  for (const path of [...files.keys()])
    if (path.endsWith('-') || path.endsWith('/etc/.pwd.lock')) files.delete(path);
  return files;
}

describe('the linux driver through a whole account lifecycle', () => {
  let h: LinuxHarness;
  let uid = 0;
  const file = (path: string) => join(h.root, path);
  const lines = (path: string) => readFileSync(file(path), 'utf8').split('\n').filter(Boolean);
  /** Postfix's table `name`, a line each. */
  const table = (name: string) => postfixTable(h.root, name).split('\n').filter(Boolean);
  const dovecot = (table: 'logins' | 'users') => dovecotRows(h.root, table).split('\n').filter(Boolean);
  /** The users /etc/group lists in a group. */
  const members = (group: string) =>
    lines('etc/group')
      .find((line) => line.startsWith(`${group}:`))
      ?.split(':')[3]
      ?.split(',')
      .filter(Boolean) ?? [];

  before(async () => {
    h = await linuxSetup();
    await h.call('addpkg', { name: 'shell', shell: 'on', mailquota: '250' });
    await h.call('addpkg', { name: 'noshell', shell: 'off', quota: '500', mailquota: '100' });
  });
  after(() => h.close());

  it('createacct makes the system user, its password, home, site, zone and DKIM key', async () => {
    const reply = await callCreateacct(h, 'alice', {
      email: 'a@example.org',
      package: 'shell',
      password: 'Alice-pass-1',
    });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    const user = findSystemUser(h.root, 'alice')!;
    uid = user.uid;
    assert.deepEqual(
      { ...user, uid: 0, gid: 0 },
      {
        name: 'alice',
        uid: 0,
        gid: 0,
        gecos: 'Berth alice.example.com',
        home: '/home/alice',
        shell: '/etc/berth/confine',
      },
    );
    assert.equal(verifySha512Crypt('Alice-pass-1', shadowPassword(h.root, 'alice')!), true);
    // The password is hashed once: the system takes the hash the store keeps.
    assert.equal(shadowPassword(h.root, 'alice'), await passwordHashOf(h.services.store.db, 'alice'));
    // No subordinate ids: /etc/subuid and /etc/subgid, which every user reads, do not name it.
    for (const table of ['etc/subuid', 'etc/subgid'])
      assert.doesNotMatch(readFileSync(file(table), 'utf8'), /^alice:/m, table);
    // The home is root's (sshd chroots to it) and the account's group's; what is in it is the account's.
    const home = statSync(file('home/alice'));
    assert.deepEqual([home.uid, home.gid, home.mode & 0o777], [0, user.gid, 0o751]);
    // public_html is the account's, with the web server's group: no other account may enter it.
    const publicHtml = statSync(file('home/alice/public_html'));
    assert.deepEqual(
      [publicHtml.uid, publicHtml.gid, publicHtml.mode & 0o777],
      [uid, findSystemUser(h.root, 'www-data')!.gid, 0o750],
    );
    assert.ok(!h.commands.flat().includes('Alice-pass-1'), 'the password reached a command line');
    // The site's log: nginx's workers write it, the account's group reads it, in a directory no
    // one else lists; www.'s requests are logged there too.
    const webUid = findSystemUser(h.root, 'www-data')!.uid;
    for (const [path, owner, mode] of [
      ['var/log/nginx/alice.example.com', 0, 0o751],
      ['var/log/nginx/alice.example.com/access.log', webUid, 0o640],
    ] as const) {
      const stat = statSync(file(path));
      assert.deepEqual([stat.uid, stat.gid, stat.mode & 0o777], [owner, user.gid, mode], path);
    }
    assert.equal(readlinkSync(file('var/log/nginx/www.alice.example.com')), 'alice.example.com');
    assert.match(
      readFileSync(file('etc/logrotate.d/berth-sites'), 'utf8'),
      /\/var\/log\/nginx\/\*\/access\.log .*\n(.*\n)*\s+copytruncate\n/,
    );
  });

  it('gives the account a PHP pool of its own, HTTPS with a fallback certificate, and shows its state', async () => {
    const pool = readFileSync(file('etc/berth/php-fpm/alice.conf'), 'utf8');
    for (const line of [
      '[berth-alice]',
      'user = alice',
      'group = alice',
      'pm = ondemand',
      'php_admin_value[open_basedir] = /home/alice/:/home/alice/tmp/:/tmp/:/var/tmp/:/dev/shm/',
      'php_admin_value[session.save_path] = /home/alice/tmp',
      'php_admin_value[upload_tmp_dir] = /home/alice/tmp',
    ])
      assert.ok(pool.split('\n').includes(line), `the pool has "${line}"`);
    const tmp = statSync(file('home/alice/tmp'));
    assert.equal(tmp.uid, uid);
    assert.equal(tmp.mode & 0o777, 0o700);

    // One configuration serves every site: it names none of them.
    const sites = readFileSync(file('etc/nginx/sites-enabled/berth-sites.conf'), 'utf8');
    assert.doesNotMatch(sites, /alice/);
    assert.match(sites, /return 301 https:\/\/\$host:\d+\$request_uri;/);
    assert.match(
      sites,
      /location \^~ \/\.well-known\/acme-challenge\/ \{\n\s+alias [^\n]*\/var\/www\/berth-acme\/;/,
    );
    assert.match(sites, /listen 127\.0\.0\.1:\d+ ssl;/);
    assert.match(sites, /index index\.php index\.html index\.htm;/);
    assert.match(sites, /fastcgi_pass unix:\$berth_site\/php;/);
    assert.match(sites, /disable_symlinks if_not_owner from=\S+\/var\/www\/berth-sites;/);
    // The site: a directory of root's that nginx's workers alone may read, with its links.
    const site = file('var/www/berth-sites/alice.example.com');
    const webGid = findSystemUser(h.root, 'www-data')!.gid;
    for (const dir of [file('var/www/berth-sites'), site]) {
      const stat = statSync(dir);
      assert.deepEqual([stat.uid, stat.gid, stat.mode & 0o777], [0, webGid, 0o750], dir);
    }
    // The socket is named by a keyed hash of the user: /proc/net/unix lists its path to everyone.
    // The master is handed it under a name that is no path (PHP-FPM removes its path when it ends).
    const name = /^listen = \/run\/berth\/php\/inherited\/(berth-[0-9a-f]{24}\.sock)$/m.exec(
      readFileSync(file('etc/berth/php-fpm/alice.conf'), 'utf8'),
    )?.[1];
    assert.ok(name);
    assert.equal(readlinkSync(join(site, 'php')), file(`run/berth/php/${name}`));
    assert.equal(
      readlinkSync(join(site, 'certificate.pem')),
      file('etc/berth/certs/alice.example.com/certificate.pem'),
    );
    assert.equal(readlinkSync(join(site, 'root')), file('home/alice/public_html'));
    // The root's link is the account's: nginx follows it only to what the account owns.
    assert.equal(lstatSync(join(site, 'root')).uid, uid);
    assert.equal(readlinkSync(file('var/www/berth-sites/www.alice.example.com')), 'alice.example.com');

    // nginx's workers read the certificate and its key on each handshake: the web server's group.
    const certificate = file('etc/berth/certs/alice.example.com/certificate.pem');
    assert.deepEqual([statSync(certificate).mode & 0o777, statSync(certificate).gid], [0o640, webGid]);
    const pem = readFileSync(certificate, 'utf8');
    const leaf = new X509Certificate(pem);
    assert.equal(leaf.checkHost('www.alice.example.com'), 'www.alice.example.com');
    assert.ok(
      leaf.verify(new X509Certificate(readFileSync(file('etc/berth/certs/fallback-ca.pem'))).publicKey),
    );
    assert.match(pem, /-----BEGIN PRIVATE KEY-----/);

    const certs = await berth([
      'certs',
      '--json',
      '--driver',
      'linux',
      '--data-dir',
      h.services.config.dataDir,
      '--system-root',
      h.root,
      // The harness names its server panel (test/helpers.ts); the command line is told so too.
      '--node',
      'panel',
    ]);
    assert.equal(certs.code, 0, certs.stderr);
    const [row] = JSON.parse(certs.stdout) as { user: string; state: string; issuer: string }[];
    assert.deepEqual([row?.user, row?.state], ['alice', 'fallback']);
    assert.match(row!.issuer, /Berth fallback CA/);

    // …and in the portal: the account list and the account's own page.
    await setPortalPassword(h.services, PORTAL_PASSWORD, CLI);
    const { cookie } = await login(h);
    const accounts = await get(h, '/accounts', cookie);
    assert.equal(accounts.status, 200);
    assert.match(accounts.body, /<th scope="col">Certificate<\/th>/);
    assert.match(accounts.body, /Waiting for ACME/);
    const page = await get(h, '/accounts/alice', cookie);
    assert.match(page.body, /<dt>Certificate<\/dt><dd class="certificate">[\s\S]*?Waiting for ACME/);
  });

  it('writes a configuration that nginx -t accepts, listening on every address a site may have', () => {
    const sites = readFileSync(file('etc/nginx/sites-enabled/berth-sites.conf'), 'utf8');
    assert.match(sites, /root \$berth_site\/root;/);
    for (const address of ['127\\.0\\.0\\.1', '127\\.0\\.0\\.10', '\\[::1\\]'])
      assert.match(sites, new RegExp(`listen ${address}:\\d+;`));
    nginxAccepts(h.root);
  });

  it('writes a zone that named-checkzone accepts, with NS, A, www, MX, SPF and a valid DKIM record', () => {
    const zoneFile = file('etc/bind/zones/alice.example.com.db');
    execFileSync('/usr/bin/named-checkzone', ['-q', 'alice.example.com', zoneFile]);
    const zone = readFileSync(zoneFile, 'utf8');
    assert.match(zone, /@\s+IN NS\s+ns1\.panel\.example\.net\./);
    assert.match(zone, /@\s+IN A\s+127\.0\.0\.1/);
    assert.match(zone, /www\s+IN CNAME @/);
    assert.match(zone, /@\s+IN MX 10 mail\.alice\.example\.com\./);
    assert.match(zone, /"v=spf1 a mx ip4:127\.0\.0\.1 ~all"/);
    const keyFile = file('etc/berth/dkim/alice.example.com.private');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    const strings = [
      ...(/default\._domainkey IN TXT \( (.*) \)/.exec(zone)?.[1] ?? '').matchAll(/"([^"]*)"/g),
    ].map((m) => m[1]!);
    assert.ok(
      strings.length >= 2 && strings.every((s) => Buffer.byteLength(s) <= 255),
      'TXT strings of at most 255 bytes',
    );
    const published = /p=([A-Za-z0-9+/=]+)$/.exec(strings.join(''))![1]!;
    const publicKey = createPublicKey({ key: Buffer.from(published, 'base64'), format: 'der', type: 'spki' });
    assert.equal(publicKey.asymmetricKeyDetails?.modulusLength, 2048);
    const signature = createSign('sha256').update('dkim').sign(readFileSync(keyFile, 'utf8'));
    assert.equal(createVerify('sha256').update('dkim').verify(publicKey, signature), true);
  });

  it('accepts the domain for mail, lists both logins with the system hash, signs with the zone key, and jails the shell', () => {
    assert.deepEqual(table('domains'), ['alice.example.com OK']);
    assert.deepEqual(table('mailboxes'), ['alice@alice.example.com OK']);
    assert.deepEqual(table('senders'), ['@alice.example.com alice, alice@alice.example.com']);
    // sendmail -f from the account's own programs: its login, or an address of its domain.
    assert.deepEqual(table('local-senders'), ['alice alice, @alice.example.com']);
    // Local mail to the account's user goes to its mailbox, never to /var/mail.
    assert.deepEqual(table('local-aliases'), ['alice alice@alice.example.com']);
    const hash = shadowPassword(h.root, 'alice');
    assert.deepEqual(dovecot('logins'), [`alice\t${hash}\talice`, `alice@alice.example.com\t${hash}\talice`]);
    // Every table lists the tenants: root's, and readable by its service's group alone.
    for (const table of [
      'etc/postfix/berth/local-senders',
      'etc/dovecot/berth/mail.sqlite',
      'etc/opendkim/berth/keys',
      'etc/opendkim/berth/signing',
    ])
      assert.equal(statSync(file(table)).mode & 0o777, 0o640, table);
    assert.equal(statSync(file('etc/berth/mail/alice.example.com.json')).mode & 0o777, 0o600);
    assert.equal(statSync(file('etc/berth/mail')).mode & 0o777, 0o700);
    assert.deepEqual(dovecot('users'), [
      `alice\t${uid}\t${uid}\t/home/alice\t*:storage=250M`,
      `alice@alice.example.com\t${uid}\t${uid}\t/home/alice\t*:storage=250M`,
    ]);
    assert.deepEqual(lines('etc/opendkim/berth/signing'), [
      '*@alice.example.com default._domainkey.alice.example.com',
    ]);
    assert.deepEqual(lines('etc/opendkim/berth/keys'), [
      'default._domainkey.alice.example.com alice.example.com:default:/etc/berth/dkim/alice.example.com.private',
    ]);
    const maildir = statSync(file('home/alice/Maildir'));
    assert.deepEqual([maildir.uid, maildir.mode & 0o777], [uid, 0o700]);
    // shell=on: the berth-shell rules, and a jail hard-linked from the template with its own /etc.
    assert.deepEqual([members('berth-shell'), members('berth-sftp')], [['alice'], []]);
    assert.equal(
      statSync(file('home/alice/usr/bin/true')).ino,
      statSync(file('home/.berth-jail/usr/bin/true')).ino,
    );
    assert.deepEqual(lines('home/alice/etc/passwd'), [
      'root:x:0:0:root:/root:/bin/bash',
      `alice:x:${uid}:${uid}::/home/alice:/bin/bash`,
    ]);
    assert.equal(statSync(file('home/alice/home/alice')).uid, uid);
    // The login shell, Berth's confinement, is the system's and, at the same path, the jail's.
    for (const path of ['etc/berth/confine', 'home/alice/etc/berth/confine']) {
      const script = statSync(file(path));
      assert.deepEqual([script.uid, script.mode & 0o777], [0, 0o755], path);
      assert.match(readFileSync(file(path), 'utf8'), /^my \$shell = '\/bin\/bash';$/m, path);
    }
    assert.match(
      readFileSync(file('etc/ssh/sshd_config.d/berth.conf'), 'utf8'),
      /Match Group berth-sftp\n\s+ChrootDirectory %h\n\s+ForceCommand internal-sftp/,
    );
  });

  it('passwd sets the new hash, for the system and the mail logins', async () => {
    const ran = h.commands.length;
    assert.equal((await h.call('passwd', { user: 'alice', password: 'Alice-pass-2' })).statusCode, 200);
    const hash = shadowPassword(h.root, 'alice')!;
    assert.equal(verifySha512Crypt('Alice-pass-2', hash), true);
    // Any user can read a command line in /proc: the hash goes to chpasswd on standard input only.
    assert.deepEqual(
      h.commands.slice(ran).filter((argv) => argv.some((arg) => arg.includes(hash.slice(3)))),
      [],
    );
    assert.deepEqual(
      h.inputs.slice(ran).filter((input) => input.includes(hash)),
      [`alice:${hash}\n`],
    );
    assert.equal(dovecot('logins')[0], `alice\t${shadowPassword(h.root, 'alice')}\talice`);
  });

  it('suspendacct locks the user, takes its shell and answers 503 for the site; unsuspendacct restores it', async () => {
    const sites = readFileSync(file('etc/nginx/sites-enabled/berth-sites.conf'), 'utf8');
    assert.match(sites, /if \(-e \$berth_site\/suspended\) \{\n\s+return 503;/);
    const flag = file('var/www/berth-sites/alice.example.com/suspended');
    assert.equal((await h.call('suspendacct', { user: 'alice', reason: 'Unpaid' })).statusCode, 200);
    assert.match(shadowPassword(h.root, 'alice')!, /^!\$6\$/);
    assert.equal(findSystemUser(h.root, 'alice')?.shell, '/usr/sbin/nologin');
    assert.deepEqual(dovecot('logins'), [], 'no mail login while suspended');
    assert.deepEqual(table('mailboxes'), ['alice@alice.example.com OK'], 'mail still arrives');
    // Postfix's tables stay as they were: no login logs in to send, and the sender-policy milter
    // refuses a session already open, since Dovecot lists none of the account's logins.
    assert.deepEqual(table('senders'), ['@alice.example.com alice, alice@alice.example.com']);
    assert.deepEqual(members('berth-suspended'), ['alice']);
    // Its sites answer 503 while its suspension file exists; the configuration is unchanged.
    assert.equal(existsSync(flag), true);
    assert.equal(readFileSync(file('etc/nginx/sites-enabled/berth-sites.conf'), 'utf8'), sites);
    nginxAccepts(h.root);
    assert.deepEqual(await inspect(h.services), []);
    assert.equal((await h.call('passwd', { user: 'alice', password: 'Alice-pass-3' })).statusCode, 200);
    assert.match(shadowPassword(h.root, 'alice')!, /^!\$6\$/, 'a password change keeps the account locked');
    assert.equal(shadowPassword(h.root, 'alice'), `!${await passwordHashOf(h.services.store.db, 'alice')}`);

    assert.equal((await h.call('unsuspendacct', { user: 'alice' })).statusCode, 200);
    assert.equal(verifySha512Crypt('Alice-pass-3', shadowPassword(h.root, 'alice')!), true);
    assert.equal(dovecot('logins').length, 2);
    assert.deepEqual(table('senders'), ['@alice.example.com alice, alice@alice.example.com']);
    assert.deepEqual(members('berth-suspended'), []);
    assert.equal(findSystemUser(h.root, 'alice')?.shell, '/etc/berth/confine');
    assert.equal(existsSync(flag), false);
    assert.equal(readFileSync(file('etc/nginx/sites-enabled/berth-sites.conf'), 'utf8'), sites);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a suspension or unsuspension failing after the lock undoes it: password, shell and groups as they were', async () => {
    const hash = shadowPassword(h.root, 'alice')!;
    const failing = async (call: string) => {
      h.failAt.step = 'mail logins';
      try {
        assert.equal((await h.call(call, { user: 'alice' })).statusCode, 500);
      } finally {
        h.failAt.step = null;
      }
    };
    await failing('suspendacct');
    assert.equal(shadowPassword(h.root, 'alice'), hash);
    assert.equal(findSystemUser(h.root, 'alice')?.shell, '/etc/berth/confine');
    assert.deepEqual([members('berth-shell'), members('berth-suspended')], [['alice'], []]);
    assert.equal((await h.call('suspendacct', { user: 'alice' })).statusCode, 200);
    await failing('unsuspendacct');
    assert.equal(shadowPassword(h.root, 'alice'), `!${hash}`);
    assert.equal(findSystemUser(h.root, 'alice')?.shell, '/usr/sbin/nologin');
    assert.deepEqual([members('berth-shell'), members('berth-suspended')], [['alice'], ['alice']]);
    assert.equal((await h.call('unsuspendacct', { user: 'alice' })).statusCode, 200);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('editquota and changepackage change the quota and the shell', async () => {
    assert.equal((await h.call('editquota', { user: 'alice', quota: '100' })).statusCode, 200);
    assert.equal((await h.call('changepackage', { user: 'alice', package: 'noshell' })).statusCode, 200);
    assert.equal(findSystemUser(h.root, 'alice')?.shell, '/usr/sbin/nologin');
    assert.deepEqual([members('berth-shell'), members('berth-sftp')], [[], ['alice']]);
    assert.equal(existsSync(file('home/alice/usr')), false, 'the jail goes with the shell');
    assert.match(dovecot('users')[0]!, /storage=100M$/);
    assert.deepEqual(await inspect(h.services), []);
  });

  it("usage refresh measures the home directory and this month's bytes in the access log", async () => {
    writeFileSync(file('home/alice/public_html/big.bin'), Buffer.alloc(3 * 1024 * 1024, 1));
    chownSync(file('home/alice/public_html/big.bin'), uid, uid);
    const now = new Date();
    const month = now.toLocaleString('en-US', { month: 'short' });
    const stamp = `${String(now.getDate()).padStart(2, '0')}/${month}/${now.getFullYear()}:10:00:00 +0000`;
    const lines = [
      `203.0.113.1 - - [${stamp}] "GET /big.bin HTTP/1.1" 200 1048576 "-" "curl"`,
      `203.0.113.1 - - [${stamp}] "GET /big.bin HTTP/1.1" 200 1048577 "-" "curl"`,
      `203.0.113.1 - - [01/Jan/1999:10:00:00 +0000] "GET / HTTP/1.1" 200 99999999 "-" "curl"`,
    ];
    // One line in the log, one in the copy a rotation early this month left.
    const [first, second, old] = lines;
    writeFileSync(file('var/log/nginx/alice.example.com/access.log'), `${first}\n${old}\n`);
    writeFileSync(file('var/log/nginx/alice.example.com/access.log.1'), `${second}\n`);
    assert.equal(await refreshUsage(h.services), 1);
    const acct = await summary(h, 'alice');
    assert.ok(
      Number(acct.quota_usage) >= 3 && Number(acct.quota_usage) <= 4,
      `quota_usage ${acct.quota_usage}`,
    );
    assert.equal(acct.bandwidth_usage, 3);
  });

  it('createacct refuses a name the system already has', async () => {
    const taken = readFileSync(file('etc/passwd'), 'utf8')
      .split('\n')
      .map((line) => line.split(':')[0]!)
      .find(
        (name) =>
          /^[a-z][a-z0-9]{0,15}$/.test(name) &&
          !['root', 'daemon', 'bin', 'sys', 'nobody', 'mail', 'postgres', 'sshd', 'named', 'www'].includes(
            name,
          ) &&
          !name.startsWith('test'),
      );
    assert.ok(taken, 'a system user to collide with');
    const reply = await callCreateacct(h, taken, { domain: 'taken.example', email: 'a@example.org' });
    assertRefused(reply, 400, 'invalid_parameter', 'user');
  });

  it('a dedicated address goes into the zone (the sites listen on every address of the pool)', async () => {
    const reply = await callCreateacct(h, 'bob', {
      domain: 'bob.example',
      email: 'b@example.org',
      ipv4: 'on',
      ipv6: 'on',
      dkim: 'off',
      mailserver: 'remote',
    });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(readlinkSync(file('var/www/berth-sites/bob.example/root')), file('home/bob/public_html'));
    const zone = readFileSync(file('etc/bind/zones/bob.example.db'), 'utf8');
    assert.match(zone, /@\s+IN A\s+127\.0\.0\.10/);
    assert.match(zone, /@\s+IN AAAA\s+::1/);
    assert.doesNotMatch(zone, /IN MX/);
    assert.doesNotMatch(zone, /_domainkey/);
    execFileSync('/usr/bin/named-checkzone', ['-q', 'bob.example', file('etc/bind/zones/bob.example.db')]);
    // mailserver=remote: this server does not take the domain's mail, nor has a mailbox for it.
    assert.doesNotMatch(postfixTable(h.root, 'domains'), /bob\.example/);
    assert.equal(existsSync(file('etc/berth/mail/bob.example.json')), false);
    assert.equal(existsSync(file('home/bob/Maildir')), false);
  });

  it('removeacct leaves nothing behind, and doctor finds no difference', async () => {
    for (const user of ['alice', 'bob']) assert.equal((await h.call('removeacct', { user })).statusCode, 200);
    assert.equal(findSystemUser(h.root, 'alice'), undefined);
    assert.equal(shadowPassword(h.root, 'alice'), undefined);
    for (const path of [
      'home/alice',
      'home/bob',
      'var/www/berth-sites/alice.example.com',
      'var/www/berth-sites/www.alice.example.com',
      'var/log/nginx/www.alice.example.com',
      'etc/bind/zones/alice.example.com.db',
      'etc/berth/dkim/alice.example.com.private',
      'etc/berth/dkim/alice.example.com.txt',
      'var/log/nginx/alice.example.com',
    ]) {
      assert.equal(existsSync(file(path)), false, path);
    }
    assert.deepEqual(await inspect(h.services), []);
  });

  it('doctor lists what differs between the store and the system', async () => {
    await callCreateacct(h, 'carol', { domain: 'carol.example', email: 'c@example.org' });
    rmSync(file('etc/bind/zones/carol.example.db'));
    rmSync(file('etc/berth/mail/carol.example.json'));
    writeFileSync(file('etc/berth/mail/stray.example.json'), '{}', { mode: 0o600 });
    chmodSync(file('etc/opendkim/berth/signing'), 0o644);
    execFileSync('/usr/sbin/usermod', ['--prefix', h.root, '-G', '', '--', 'carol']);
    mkdirSync(file('var/www/berth-sites/stray.example'));
    execFileSync('/usr/sbin/useradd', ['--prefix', h.root, '-M', '-c', 'Berth ghost.example', '--', 'ghost']);
    assert.deepEqual(await inspect(h.services), [
      '/etc/opendkim/berth/signing: readable by every user (mode 0644)',
      'carol: no DNS zone',
      'carol: no mail domain',
      'carol: not in the group berth-sftp',
      'ghost: system user with no account in the store',
      'stray.example: mail domain /etc/berth/mail/stray.example.json with no account in the store',
      'stray.example: site directory /var/www/berth-sites/stray.example with no account in the store',
    ]);
  });
});

describe('a failure at any step of createacct', () => {
  const steps = [
    'system user',
    'home directory',
    'DKIM key',
    'DNS zone',
    'DNS zone check',
    'site',
    'Maildir',
    'mail domain',
    'SSH keys directory',
    'jail',
  ];
  const h = forSuite(linuxSetup);

  for (const step of steps) {
    it(`at "${step}" answers 500 naming it and leaves no trace`, async () => {
      const before = snapshot(h.root);
      h.failAt.step = step;
      const reply = await callCreateacct(h, 'dana', {
        domain: 'dana.example',
        email: 'd@example.org',
        shell: 'on',
      });
      h.failAt.step = null;
      assert.deepEqual(reply.body, {
        data: { code: 'provisioning_failed' },
        info: `The system step "${step}" failed; everything done for this call was undone.`,
        status: 500,
      });
      assert.deepEqual(snapshot(h.root), before);
      assert.equal(await findAccount(h.services.store.db, 'dana'), undefined);
    });
  }
});

describe('hostile identifiers', () => {
  it('never reach a command', async () => {
    const h = await linuxSetup();
    try {
      const created = await callCreateacct(h, 'erin', { domain: 'erin.example', email: 'e@example.org' });
      assert.equal(created.statusCode, 200);
      const account = (await findAccount(h.services.store.db, 'erin'))!;
      h.commands.length = 0;
      for (const hostile of [
        { user: '-rf' },
        { user: 'a;reboot' },
        { user: '../../etc' },
        { user: 'root\nx' },
        { domain: 'x.example;reboot' },
        { domain: '../../etc/passwd' },
        { domain: '-x.example' },
        { homedir: '/home/../etc' },
        { homedir: '/home/a b' },
      ]) {
        const bad = { ...account, ...hostile };
        for (const plan of [
          () => h.services.driver.createAccount(bad, 'Password-1'),
          () => h.services.driver.removeAccount(bad),
          () => h.services.driver.suspendAccount(bad),
          () => h.services.driver.changePassword(bad, 'Password-1'),
          () => h.services.driver.changeLimits(account, bad),
        ]) {
          assert.throws(
            plan,
            (error: unknown) => error instanceof StepFailed && error.step === 'check identifiers',
          );
        }
      }
      assert.deepEqual(h.commands, []);
    } finally {
      await h.close();
    }
  });
});

describe('recovery of a removeacct cut short', () => {
  it('makes the account whole again when the user and the home were already gone', async () => {
    const h = await linuxSetup();
    try {
      await createAccount(h, 'frank');
      // As if removeacct had died after its last step and before its commit.
      execFileSync('/usr/sbin/userdel', ['--prefix', h.root, '--', 'frank']);
      rmSync(join(h.root, 'home/frank'), { recursive: true });
      journalUnfinished(h, 'frank', 'site');
      assert.deepEqual(await recoverInterruptedCalls(h.services), [
        'frank: repaired to match the store after an interrupted "site"',
      ]);
      const user = findSystemUser(h.root, 'frank')!;
      for (const [dir, owner, mode] of [
        ['home/frank', 0, 0o751],
        ['home/frank/public_html', user.uid, 0o750],
      ] as const) {
        const stat = statSync(join(h.root, dir));
        assert.deepEqual([stat.uid, stat.mode & 0o777], [owner, mode], dir);
      }
      // The password went with the user and Berth never keeps one: doctor says so until passwd.
      assert.deepEqual(await inspect(h.services), ['frank: system user locked but account active']);
      const passwd = await h.call('passwd', { user: 'frank', password: 'Frank-pass-2' });
      assert.equal(passwd.statusCode, 200);
      assert.deepEqual(await inspect(h.services), []);
    } finally {
      await h.close();
    }
  });
});

describe('recovery of a move cut short', () => {
  it('removes every trace of an account the store has on another server now', async () => {
    const h = await linuxSetup();
    try {
      await createAccount(h, 'grace');
      // As if this server had stopped after the store switched the account to web2 and before it
      // removed its own copy.
      await h.services.store.db
        .updateTable('accounts')
        .set({ server: 'web2' })
        .where('user', '=', 'grace')
        .execute();
      journalUnfinished(h, 'grace', 'move-account');
      assert.deepEqual(await recoverInterruptedCalls(h.services), [
        'grace: traces of an interrupted "move-account" removed',
      ]);
      assert.equal(findSystemUser(h.root, 'grace'), undefined);
      assert.equal(existsSync(join(h.root, 'home/grace')), false);
      assert.deepEqual(await inspect(h.services), []);
      assert.equal((await findAccount(h.services.store.db, 'grace'))?.server, 'web2');
    } finally {
      await h.close();
    }
  });
});
