// Backups in the sandbox (CONTRACT §15): an account with a site, a mailbox with mail and a database
// with a table is backed up by the server's job; a deleted file, an emptied mailbox, a dropped table
// and finally the whole removed account are each restored through the API to exactly what the
// snapshot held, and served again (the site over HTTPS, the mail over IMAP with the mailbox's own
// password, the table read by the site's PHP with mysqli, its user's old password). The account next door plants links
// before a restore and reads for the repository: the restore writes nothing outside the account,
// and neither the repository nor its password can be read from an account's shell or PHP.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  curl,
  inboxMessage,
  insecureRequest,
  type RunningSandbox,
  sandboxHolderCall,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

const INFO = 'info@alice.example';
const INFO_PASSWORD = 'Info-pass-5678';
const DB_SECRET = 'Db-Secret-9876';
/** A PHP page of alice's site that reads the first post with mysqli over the local socket. */
const DB_PAGE = `<?php
mysqli_report(MYSQLI_REPORT_OFF);
$db = @new mysqli('localhost', 'alice_wp', '${DB_SECRET}', 'alice_wp');
if ($db->connect_errno) { echo 'refused: ', $db->connect_error; exit; }
$row = $db->query('SELECT title FROM posts WHERE id = 1');
echo $row ? 'title=' . $row->fetch_row()[0] : 'query refused: ' . $db->error;
`;

describe('backups in the sandbox', () => {
  const dataDir = tempDir('berth-backups-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  let snapshot = '';

  /** An administrator's call, with the answer's data. */
  const call = async (operation: string, params: Record<string, string>) => {
    const reply = await insecureRequest(Number(new URL(sandbox.api).port), `/api/v1/${operation}/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-api-user': sandbox.api_user,
        'x-api-password': sandbox.api_password,
      },
      body: new URLSearchParams(params).toString(),
    });
    return { status: reply.status, ...(JSON.parse(reply.body) as { data: unknown; info: string }) };
  };
  const page = (domain: string, path: string) =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  const asAlice = (script: string) => running.asUser('alice', script);
  const asHolder = (user: string, operation: string, params: Record<string, string>) =>
    sandboxHolderCall(
      sandbox,
      { user, password: `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234` },
      operation,
      params,
    );
  /** The MariaDB client as alice's system user, logging in as her database user. */
  const mariadb = (sql: string, password = DB_SECRET) =>
    asAlice(
      `MYSQL_PWD='${password}' /usr/bin/mariadb --batch --skip-column-names -u alice_wp alice_wp -e "${sql}"`,
    );

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('backs up an account with a site and mail as a job, and lists its snapshot', async () => {
    const wrote = await asAlice(
      'echo original > /home/alice/public_html/index.html && echo kept > /home/alice/public_html/other.html',
    );
    assert.equal(wrote.code, 0, wrote.stderr);
    assert.equal(page('alice.example', '/index.html').body, 'original\n');
    const made = await sandboxHolderCall(
      sandbox,
      { user: 'alice', password: 'Alice-pass-1234' },
      'add_mailbox',
      {
        email: INFO,
        password: INFO_PASSWORD,
      },
    );
    assert.equal(made.status, 200, made.body.info);
    const sent = await smtpSend(sandbox, {
      port: sandbox.smtp_port,
      from: 'friend@example.org',
      to: [INFO],
      message: `From: friend@example.org\nTo: ${INFO}\nSubject: keep me\n\nThe mail to keep.\n`,
    });
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    assert.match(await arrivedMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), /The mail to keep\./);
    for (const [op, params] of [
      ['add_database', { name: 'wp' }],
      ['add_database_user', { name: 'wp', password: DB_SECRET }],
      ['grant_database', { database: 'wp', dbuser: 'wp' }],
    ] as const) {
      const reply = await asHolder('alice', op, params);
      assert.equal(reply.status, 200, reply.body.info);
    }
    const table = await mariadb(
      "CREATE TABLE posts (id INT PRIMARY KEY, title TEXT); INSERT INTO posts VALUES (1, 'kept row')",
    );
    assert.equal(table.code, 0, table.stderr);
    const php = await asAlice(`umask 022 && cat > /home/alice/public_html/db.php <<'EOF'\n${DB_PAGE}\nEOF`);
    assert.equal(php.code, 0, php.stderr);
    assert.equal(page('alice.example', '/db.php').body, 'title=kept row');
    const queued = await call('backupacct', { user: 'alice' });
    assert.equal(queued.status, 200, queued.info);
    assert.match((queued.data as { job: string }).job, /^[a-z2-7]{10}$/);
    for (let i = 0; i < 120 && !snapshot; i++) {
      const listed = await call('listbackups', { user: 'alice' });
      snapshot = (listed.data as { snapshots: { id: string }[] }).snapshots[0]?.id ?? '';
      if (!snapshot) await sleep(1000);
    }
    assert.ok(snapshot, `no snapshot within two minutes:\n${await running.log()}`);
  });

  it('a deleted file is restored and served again; what was made since in that path goes', async () => {
    await asAlice('rm /home/alice/public_html/index.html && echo later > /home/alice/public_html/later.html');
    assert.equal(page('alice.example', '/index.html').status, 404);
    const restored = await call('restoreacct', {
      user: 'alice',
      snapshot,
      what: 'files',
      path: 'public_html',
    });
    assert.equal(restored.status, 200, restored.info);
    assert.equal(page('alice.example', '/index.html').body, 'original\n');
    assert.equal(page('alice.example', '/later.html').status, 404);
  });

  it('an emptied mailbox is restored and read again over IMAP with its own password', async () => {
    const emptied = await asAlice(
      'rm -f /home/alice/mail/alice.example/info/Maildir/cur/* /home/alice/mail/alice.example/info/Maildir/new/*',
    );
    assert.equal(emptied.code, 0, emptied.stderr);
    assert.equal(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), '');
    const restored = await call('restoreacct', { user: 'alice', snapshot, what: 'mail' });
    assert.equal(restored.status, 200, restored.info);
    assert.match(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), /The mail to keep\./);
  });

  it('links planted before a restore lead it nowhere outside the account', async () => {
    const marker = await running.asUser('bob', 'echo bob-own > /home/bob/public_html/index.html');
    assert.equal(marker.code, 0, marker.stderr);
    // A link in alice's site to the neighbour's (which alice cannot write anyway): a restore of a
    // path through it is refused, a restore of the files removes it, never following it.
    await asAlice('ln -s /home/bob/public_html /home/alice/public_html/x');
    const through = await call('restoreacct', {
      user: 'alice',
      snapshot,
      what: 'files',
      path: 'public_html/x/index.html',
    });
    assert.equal(through.status, 400, through.info);
    assert.deepEqual(through.data, { code: 'invalid_parameter', param: 'path' });
    const whole = await call('restoreacct', { user: 'alice', snapshot, what: 'files' });
    assert.equal(whole.status, 200, whole.info);
    assert.equal(page('alice.example', '/index.html').body, 'original\n');
    assert.equal(page('bob.example', '/index.html').body, 'bob-own\n');
    const bobFiles = await running.exec(['/usr/bin/ls', '-A', '/home/bob/public_html']);
    assert.deepEqual(bobFiles.stdout.trim().split('\n').sort(), ['index.html']);
    const gone = await running.exec(['/usr/bin/stat', '/home/alice/public_html/x']);
    assert.notEqual(gone.code, 0, 'the planted link is gone');
    await asAlice('ln -sfn /etc /home/alice/public_html/x');
    const etc = await call('restoreacct', {
      user: 'alice',
      snapshot,
      what: 'files',
      path: 'public_html/x/passwd',
    });
    assert.equal(etc.status, 400, etc.info);
    const shadow = await running.exec(['/usr/bin/stat', '-c', '%U %a', '/etc/passwd']);
    assert.equal(shadow.stdout.trim(), 'root 644');
  });

  it('neither the repository nor its password is readable from an account’s shell or PHP', async () => {
    for (const user of ['alice', 'bob']) {
      for (const path of ['/var/lib/berth/backup-password', '/var/lib/berth/backups/config']) {
        const read = await running.asUser(user, `cat ${path}`);
        assert.notEqual(read.code, 0, `${user} read ${path}`);
      }
      for (const dir of ['backups', 'backup-staging', 'restore-staging']) {
        const listed = await running.asUser(user, `ls /var/lib/berth/${dir}`);
        assert.notEqual(listed.code, 0, `${user} listed ${dir}`);
      }
      const listed = await running.asUser(user, 'ls /var/lib/berth/backups /var/lib/berth/backup-staging');
      assert.notEqual(listed.code, 0, `${user} listed the repository`);
    }
    await running.asUser(
      'bob',
      `printf '%s' '<?php foreach (["/var/lib/berth/backup-password", "/var/lib/berth/backups/config"] as $f) echo @file_get_contents($f) === false ? "denied " : "READ ";' > /home/bob/public_html/peek.php`,
    );
    assert.equal(page('bob.example', '/peek.php').body, 'denied denied ');
  });

  it('the holder restores its own file with restore_backup', async () => {
    await asAlice('echo changed > /home/alice/public_html/other.html');
    const restored = await sandboxHolderCall(
      sandbox,
      { user: 'alice', password: 'Alice-pass-1234' },
      'restore_backup',
      {
        snapshot: snapshot.slice(0, 8),
        what: 'files',
        path: 'public_html/other.html',
      },
    );
    assert.equal(restored.status, 200, restored.body.info);
    assert.equal(page('alice.example', '/other.html').body, 'kept\n');
  });

  it('a dropped table comes back with restore_backup what=database, read again by the site’s PHP', async () => {
    const dropped = await mariadb('DROP TABLE posts; CREATE TABLE later (id INT)');
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.match(page('alice.example', '/db.php').body, /^query refused/);
    // The neighbour names alice's database: it is his own bob_alice_wp, which he has not.
    const theirs = await asHolder('bob', 'restore_backup', {
      snapshot,
      what: 'database',
      database: 'alice_wp',
    });
    assert.equal(theirs.status, 400, theirs.body.info);
    const restored = await asHolder('alice', 'restore_backup', {
      snapshot,
      what: 'database',
      database: 'wp',
    });
    assert.equal(restored.status, 200, restored.body.info);
    assert.equal(page('alice.example', '/db.php').body, 'title=kept row');
    assert.equal((await mariadb('SHOW TABLES')).stdout, 'posts\n');
    // Made again where alice's disk quota counts it (homes on btrfs), not in MariaDB's data directory.
    const place = await running.exec(['/usr/bin/readlink', '/var/lib/mysql/alice_wp']);
    assert.equal(place.stdout, '/home/.berth-databases/alice/alice_wp\n', place.stderr);
  });

  it('a removed account is made again from its snapshot: site served, mailbox and login as before', async () => {
    assert.equal((await call('removeacct', { user: 'alice' })).status, 200);
    assert.notEqual(page('alice.example', '/index.html').body, 'original\n');
    const listed = await call('listbackups', { user: 'alice' });
    assert.equal((listed.data as { snapshots: unknown[] }).snapshots.length, 1);
    const restored = await call('restoreacct', { user: 'alice', snapshot });
    assert.equal(restored.status, 200, restored.info);
    assert.equal(page('alice.example', '/index.html').body, 'original\n');
    assert.match(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), /The mail to keep\./);
    // Its database user logs in with its old password; the site's PHP reads the row.
    assert.equal((await mariadb('SELECT title FROM posts')).stdout, 'kept row\n');
    assert.equal(page('alice.example', '/db.php').body, 'title=kept row');
    const login = await sandboxHolderCall(
      sandbox,
      { user: 'alice', password: 'Alice-pass-1234' },
      'account_info',
    );
    assert.equal(login.status, 200, login.body.info);
  });
});
