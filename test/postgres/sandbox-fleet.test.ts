// `berth move-account` between two sandboxes on one PostgreSQL store, each a whole hosting server
// (CONTRACT §12, §13, §14): an account's PHP site over HTTPS with its ACME certificate, its mail with
// its password, its MariaDB database (its data, its user and password, read by its PHP), and the
// holder's objects (a mailbox with its own password and mail, a forwarder, a cron job, an FTP
// account, a mailing list) answer from the new server afterwards; the old one keeps nothing of them.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { postgresForTest, tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  BERTH,
  curl,
  mailCurl,
  type RunningSandbox,
  sandboxHolderCall,
  smtpSend,
  startSandbox,
} from '../process.ts';

describe('moving an account between two sandboxes of one fleet', () => {
  const dataDir = tempDir('berth-sandbox-fleet-');
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  const running: RunningSandbox[] = [];
  let one: SandboxInfo;
  let two: SandboxInfo;

  /** The site's page from one sandbox's nginx, verified against `ca` only. */
  const page = (sandbox: SandboxInfo, ca: string, path = '/') =>
    curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '--cacert',
      ca,
      `https://alice.example:${sandbox.https_port}${path}`,
    ]);
  const send = (sandbox: SandboxInfo, text: string, to = 'alice@alice.example') => {
    const file = join(dataDir, 'message.eml');
    writeFileSync(file, `Subject: ${text}\r\n\r\n${text}\r\n`);
    const url = `smtp://sandbox.test:${sandbox.smtp_port}`;
    return mailCurl(sandbox, sandbox.smtp_port, [
      url,
      '--mail-from',
      'a@example.net',
      '--mail-rcpt',
      to,
      '-T',
      file,
    ]);
  };
  /** Message `uid` of alice's own INBOX on one sandbox, once it is there. */
  const message = (sandbox: SandboxInfo, uid: number) =>
    arrivedMessage(sandbox, 'alice:Alice-pass-1234', uid);
  const berthIn = (i: number, args: string[]) =>
    running[i]!.exec([process.execPath, BERTH, ...args, '--data-dir', '/var/lib/berth']);

  before(async () => {
    database = await postgresForTest();
    for (const name of ['one', 'two'])
      running.push(await startSandbox(join(dataDir, name), ['--node', name, '--database', database.url]));
    [one, two] = running.map((r) => r.info) as [SandboxInfo, SandboxInfo];
  });
  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await database?.release();
  });

  it('serves the site and the mail from the new server, and leaves nothing on the old one', async () => {
    const listed = await berthIn(0, ['nodes']);
    assert.match(listed.stdout, /^one .* up /m);
    assert.match(listed.stdout, /^two .* up /m);
    const body = new URLSearchParams({
      apiuser: one.api_user,
      apiauth: one.api_password,
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'Alice-pass-1234',
      server: 'one',
    });
    const created = curl(['-k', '--data', body.toString(), `${one.api}api/v1/createacct/`]);
    assert.equal(created.status, 200, created.body);
    const php = '<?php echo "hello from ", posix_getpwuid(posix_geteuid())["name"];';
    const wrote = await running[0]!.asUser(
      'alice',
      `printf '%s' '${php}' > /home/alice/public_html/index.php`,
    );
    assert.equal(wrote.code, 0, wrote.stderr);
    // A database, its user and a row, read by a PHP page over MariaDB's socket.
    for (const [op, params] of [
      ['add_database', { name: 'wp' }],
      ['add_database_user', { name: 'wp', password: 'Db-pass-1234' }],
      ['grant_database', { database: 'wp', dbuser: 'wp' }],
    ] as const) {
      const reply = await sandboxHolderCall(one, { user: 'alice', password: 'Alice-pass-1234' }, op, params);
      assert.equal(reply.status, 200, reply.body.info);
    }
    const table = await running[0]!.asUser(
      'alice',
      `MYSQL_PWD=Db-pass-1234 mysql -u alice_wp alice_wp -e "CREATE TABLE posts (title TEXT); INSERT INTO posts VALUES ('kept')" && printf '%s' '<?php echo (new mysqli("localhost", "alice_wp", "Db-pass-1234", "alice_wp"))->query("SELECT title FROM posts")->fetch_row()[0];' > /home/alice/public_html/db.php`,
    );
    assert.equal(table.code, 0, table.stderr);
    // Its ACME certificate from the first sandbox's Pebble, and a mail in its box.
    let before = page(one, one.acme_root_ca);
    for (let i = 0; i < 100 && before.status !== 200; i++) {
      await sleep(200);
      before = page(one, one.acme_root_ca);
    }
    assert.equal(before.body, 'hello from alice', await running[0]!.log());
    assert.equal(send(one, 'before the move').status, 250);
    assert.match(await message(one, 1), /before the move/);
    // The holder's objects: a mailbox with a message, a forwarder to it, a cron job.
    const holder = { user: 'alice', password: 'Alice-pass-1234' };
    const made = [
      await sandboxHolderCall(one, holder, 'add_mailbox', {
        email: 'info@alice.example',
        password: 'Info-pass-5678',
      }),
      await sandboxHolderCall(one, holder, 'add_forwarder', {
        email: 'sales@alice.example',
        to: 'info@alice.example',
      }),
      await sandboxHolderCall(one, holder, 'add_cron_job', {
        schedule: '* * * * *',
        command: 'date > cron-ran',
      }),
      await sandboxHolderCall(one, holder, 'add_ftp_account', {
        login: 'designer',
        password: 'Design-pass-1234',
        directory: 'public_html',
      }),
      await sandboxHolderCall(one, holder, 'add_mailing_list', {
        email: 'news@alice.example',
        owner: 'alice@alice.example',
      }),
      await sandboxHolderCall(one, holder, 'add_list_member', {
        list: 'news@alice.example',
        email: 'info@alice.example',
      }),
    ];
    for (const reply of made) assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assert.equal(send(one, 'to the mailbox before the move', 'info@alice.example').status, 250);
    assert.match(
      await arrivedMessage(one, 'info@alice.example:Info-pass-5678', 1),
      /to the mailbox before the move/,
    );

    const moved = await berthIn(0, ['move-account', 'alice', '--to', 'two']);
    assert.equal(moved.code, 0, moved.stderr + (await running[0]!.log()) + (await running[1]!.log()));
    assert.match(moved.stdout, /Account alice moved from one to two/);

    // The second sandbox serves the site with the certificate the first one obtained.
    const after = page(two, one.acme_root_ca);
    assert.equal(after.status, 200, await running[1]!.log());
    assert.equal(after.body, 'hello from alice');
    // Its database, with its data, its user and its password, serves its PHP there.
    assert.equal(page(two, one.acme_root_ca, '/db.php').body, 'kept');
    // Its mail, and its password, are there; new mail arrives there.
    assert.match(await message(two, 1), /before the move/);
    assert.equal(send(two, 'after the move').status, 250);
    assert.match(await message(two, 2), /after the move/);
    // The mailbox keeps its message and its own password; the forwarder delivers into it there.
    assert.match(
      await arrivedMessage(two, 'info@alice.example:Info-pass-5678', 1),
      /to the mailbox before the move/,
    );
    assert.equal(send(two, 'forwarded after the move', 'sales@alice.example').status, 250);
    assert.match(
      await arrivedMessage(two, 'info@alice.example:Info-pass-5678', 2),
      /forwarded after the move/,
    );
    // The cron job is scheduled on the new server alone.
    const jobs = await sandboxHolderCall(two, holder, 'list_cron_jobs');
    assert.equal((jobs.body.data as unknown[]).length, 1, JSON.stringify(jobs.body));
    const crontab = (i: number) => running[i]!.exec(['/usr/bin/cat', '/etc/cron.d/berth-alice']);
    assert.match((await crontab(1)).stdout, /\* \* \* \* \*/);
    assert.notEqual((await crontab(0)).code, 0);
    // The FTP account logs in there with its password, and what it uploads the site serves.
    const upload = join(dataDir, 'ftp-page.html');
    writeFileSync(upload, 'uploaded after the move');
    const ftps = (sandbox: SandboxInfo) =>
      curl([
        '--ssl-reqd',
        '--cacert',
        sandbox.fallback_ca,
        '--resolve',
        `sandbox.test:${sandbox.ftp_port}:127.0.0.1`,
        '--user',
        'designer@alice.example:Design-pass-1234',
        '-T',
        upload,
        `ftp://sandbox.test:${sandbox.ftp_port}/ftp-page.html`,
      ]);
    assert.equal(ftps(two).ok, true, 'an FTPS upload to the new server');
    assert.equal(page(two, one.acme_root_ca, '/ftp-page.html').body, 'uploaded after the move');
    assert.equal(ftps(one).ok, false, 'no FTP login left on the old server');
    // The mailing list delivers a member's post there.
    const post = await smtpSend(two, {
      port: two.submission_port,
      login: 'info@alice.example',
      password: 'Info-pass-5678',
      from: 'info@alice.example',
      to: ['news@alice.example'],
      message:
        'From: info@alice.example\r\nTo: news@alice.example\r\nSubject: list after the move\r\n\r\nHello.\r\n',
    });
    assert.match(post.data ?? '', /^250/, JSON.stringify(post));
    assert.match(await arrivedMessage(two, 'info@alice.example:Info-pass-5678', 3), /list after the move/);

    // The first sandbox keeps nothing: no user, no site, no mail domain.
    assert.notEqual(
      (await running[0]!.exec(['/usr/bin/id', 'alice'])).code,
      0,
      moved.stdout + (await running[0]!.log()),
    );
    assert.notEqual(page(one, one.acme_root_ca).status, 200);
    const left = await running[0]!.exec([
      '/usr/bin/mariadb',
      '--batch',
      '--skip-column-names',
      '-e',
      "SHOW DATABASES LIKE 'alice\\_%'; SELECT User FROM mysql.user WHERE User LIKE 'alice\\_%'",
    ]);
    assert.equal(left.stdout, '');
    assert.notEqual(send(one, 'to the old server').status, 250);
    for (const i of [0, 1]) {
      const doctor = await berthIn(i, ['doctor']);
      assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    }
  });
});
