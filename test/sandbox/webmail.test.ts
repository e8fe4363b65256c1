// Webmail in the sandbox (CONTRACT §14): a mailbox made on the customer API gets a message; Chromium
// logs into webmail (Roundcube), reached from the panel's Email page, with the mailbox's address and
// password and sees it in the inbox;
// a wrong password is refused; one mailbox's session reads no other's mail; a message sent from
// webmail goes through submission and arrives signed for the mailbox's domain; the account next door,
// with its PHP and its shell, can read neither Roundcube's configuration (its DES key) nor its
// database, nor use its PHP-FPM socket.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { launchChromium } from '../portal/audit-page.ts';
import {
  arrivedMessage,
  curl,
  insecureRequest,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

const ALICE_INFO = { email: 'info@alice.example', password: 'Info-pass-5678' };
const BOB_INFO = { email: 'info@bob.example', password: 'Bob-info-9012' };
const SECRETS = [
  '/etc/berth/webmail/config.inc.php',
  '/etc/berth/webmail/des_key',
  '/var/lib/berth-webmail/roundcube.sqlite',
];

describe('webmail in the sandbox', () => {
  const dataDir = tempDir('berth-webmail-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  const deliver = (to: string, subject: string) =>
    smtpSend(sandbox, {
      port: sandbox.smtp_port,
      from: 'friend@example.org',
      to: [to],
      message: `From: friend@example.org\nTo: ${to}\nSubject: ${subject}\n\nHello ${to}.\n`,
    });
  /** A new browser logged into webmail as `login` (or refused: the page says so). */
  const logIn = async (login: { email: string; password: string }): Promise<Page> => {
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(sandbox.webmail_url);
    await page.fill('#rcmloginuser', login.email);
    await page.fill('#rcmloginpwd', login.password);
    await page.press('#rcmloginpwd', 'Enter');
    await page.waitForLoadState('networkidle');
    return page;
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
    for (const [user, password, mailbox] of [
      ['alice', 'Alice-pass-1234', ALICE_INFO],
      ['bob', 'Bob-pass-1234', BOB_INFO],
    ] as const) {
      const made = await sandboxHolderCall(sandbox, { user, password }, 'add_mailbox', mailbox);
      assert.equal(made.status, 200, made.body.info);
    }
    // Single sign-on URLs and the panel's link to webmail name the sandbox's host, which the
    // browser reaches on this machine, as a customer's browser reaches a server by its name.
    browser = await launchChromium(['--host-resolver-rules=MAP sandbox.test 127.0.0.1']);
  });
  after(async () => {
    for (const context of contexts) await context.close().catch(() => {});
    await browser?.close();
    if (running.child.exitCode === null) await running.stop();
  });

  it('is served over HTTPS with secure, HttpOnly, SameSite session cookies', () => {
    const reply = curl(['-k', '-D', '-', sandbox.webmail_url]);
    assert.equal(reply.status, 200);
    assert.match(reply.body, /set-cookie: roundcube_sessid=[^;]+;.*secure; HttpOnly; SameSite=Strict/i);
    const plain = curl([sandbox.webmail_url.replace('https:', 'http:')]);
    assert.notEqual(plain.status, 200, 'no webmail over plain HTTP');
  });

  it("shows a delivered message in the mailbox's inbox once it logs in with its address and password", async () => {
    const sent = await deliver(ALICE_INFO.email, 'Webmail arrival for alice');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    await arrivedMessage(sandbox, `${ALICE_INFO.email}:${ALICE_INFO.password}`, 1);
    const page = await logIn(ALICE_INFO);
    await page.getByText('Webmail arrival for alice').first().waitFor({ timeout: 30_000 });
  });

  it("is reached from the panel's Email page", async () => {
    const reply = await insecureRequest(Number(new URL(sandbox.api).port), '/api/v1/create_user_session/', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-api-user': sandbox.api_user,
        'x-api-password': sandbox.api_password,
      },
      body: 'user=alice&page=email',
    });
    assert.equal(reply.status, 200, reply.body);
    const { url } = (JSON.parse(reply.body) as { data: { url: string } }).data;
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    contexts.push(context);
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForURL(/\/email$/);
    const link = page.getByRole('link', { name: 'Open webmail' });
    assert.equal(
      await link.getAttribute('href'),
      `https://sandbox.test:${new URL(sandbox.webmail_url).port}/`,
    );
    await link.click();
    await page.fill('#rcmloginuser', ALICE_INFO.email);
    await page.fill('#rcmloginpwd', ALICE_INFO.password);
    await page.press('#rcmloginpwd', 'Enter');
    await page.getByText('Webmail arrival for alice').first().waitFor({ timeout: 30_000 });
  });

  it('refuses a wrong password, and the account’s own password for a mailbox', async () => {
    for (const password of ['Wrong-pass-0000', 'Alice-pass-1234']) {
      const page = await logIn({ email: ALICE_INFO.email, password });
      assert.equal(await page.locator('#rcmloginuser').count(), 1, 'still the login form');
      await page.getByText(/Login failed/).waitFor({ timeout: 10_000 });
    }
  });

  it("one mailbox's session reads no other mailbox's mail", async () => {
    const sent = await deliver(BOB_INFO.email, 'Bob private webmail subject');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    await arrivedMessage(sandbox, `${BOB_INFO.email}:${BOB_INFO.password}`, 1);
    const page = await logIn(ALICE_INFO);
    await page.getByText('Webmail arrival for alice').first().waitFor({ timeout: 30_000 });
    assert.equal(await page.getByText('Bob private webmail subject').count(), 0);
    // Asking for the message by its number in the session shows the session's own mailbox's.
    await page.goto(`${sandbox.webmail_url}?_task=mail&_mbox=INBOX&_uid=1&_action=show`);
    const shown = await page.content();
    assert.doesNotMatch(shown, /Bob private webmail subject/);
    assert.match(shown, /Webmail arrival for alice/);
  });

  it("sends through submission with the mailbox's own login: the message arrives, signed for its domain", async () => {
    const page = await logIn(ALICE_INFO);
    await page.goto(`${sandbox.webmail_url}?_task=mail&_action=compose`);
    await page.waitForLoadState('networkidle');
    // Elastic's recipient widget: the visible input beside the form's own (hidden) To field.
    await page.locator('#_to').locator('xpath=..').locator('input').first().fill(BOB_INFO.email);
    await page.fill('#compose-subject', 'Sent from webmail');
    await page.fill('#composebody', 'Hello Bob, from webmail.');
    await page.locator('button.send').first().click();
    await page.waitForURL(/_task=mail&_mbox=INBOX/, { timeout: 30_000 });
    // Bob's first message is the one delivered above; this one is the second.
    const arrived = await arrivedMessage(sandbox, `${BOB_INFO.email}:${BOB_INFO.password}`, 2);
    assert.match(arrived, /^Subject: Sent from webmail$/m);
    assert.match(arrived, /^From: info@alice\.example$/m);
    assert.match(arrived, /DKIM-Signature:[\s\S]*\bd=alice\.example;/);
  });

  it("the account next door reads neither Roundcube's configuration nor its database, from its shell or its PHP", async () => {
    for (const file of SECRETS) {
      const read = await running.asUser('bob', `cat ${file}`);
      assert.notEqual(read.code, 0, `${file}: ${read.stdout}`);
      assert.match(read.stderr, /Permission denied/, file);
    }
    const list = await running.asUser('bob', 'ls /var/lib/berth-webmail /etc/berth/webmail');
    assert.notEqual(list.code, 0);
    assert.doesNotMatch(list.stdout, /sqlite|des_key/);

    const php = [
      '<?php',
      ...SECRETS.map((file) => `echo @file_get_contents('${file}') === false ? "refused\\n" : "READ\\n";`),
      'echo @stream_socket_client(\'unix:///run/berth/webmail/php.sock\') === false ? "refused\\n" : "OPENED\\n";',
      '',
    ].join('\n');
    const put = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'bob',
      '--',
      '/usr/bin/python3',
      '-c',
      'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode())',
      '/home/bob/public_html/peek.php',
      php,
    ]);
    assert.equal(put.code, 0, put.stderr);
    const page = curl([
      '--resolve',
      `bob.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://bob.example:${sandbox.https_port}/peek.php`,
    ]);
    assert.equal(page.status, 200, page.body);
    assert.equal(page.body.trim(), 'refused\nrefused\nrefused\nrefused');
  });

  it('refuses the mailbox while its account is suspended, and lets it in again once unsuspended', async () => {
    assert.equal((await sandboxCall(sandbox, 'suspendacct', { user: 'bob', reason: 'unpaid' })).status, 200);
    const refused = await logIn(BOB_INFO);
    await refused.getByText(/Login failed/).waitFor({ timeout: 10_000 });
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'bob' })).status, 200);
    const page = await logIn(BOB_INFO);
    await page.getByText('Bob private webmail subject').first().waitFor({ timeout: 30_000 });
  });

  it('forgets what it kept of a mailbox (settings, identities, contacts) when the mailbox or its account is removed', async () => {
    const users = async () => {
      const read = await running.exec([
        '/usr/sbin/runuser',
        '-u',
        'berth-webmail',
        '--',
        '/usr/bin/php',
        '-r',
        'echo implode("\n", (new PDO("sqlite:/var/lib/berth-webmail/roundcube.sqlite"))->query("SELECT username FROM users ORDER BY username")->fetchAll(PDO::FETCH_COLUMN));',
      ]);
      assert.equal(read.code, 0, read.stderr);
      return read.stdout.split('\n').filter(Boolean);
    };
    assert.deepEqual(
      (await users()).filter((u) => u.startsWith('info@')),
      [ALICE_INFO.email, BOB_INFO.email],
    );
    const removed = await sandboxHolderCall(
      sandbox,
      { user: 'alice', password: 'Alice-pass-1234' },
      'remove_mailbox',
      { email: ALICE_INFO.email },
    );
    assert.equal(removed.status, 200, removed.body.info);
    const left = await users();
    assert.ok(!left.includes(ALICE_INFO.email), left.join(', '));
    assert.ok(left.includes(BOB_INFO.email), "the other mailbox's stay");
    // And what it kept of every login of an account removed.
    assert.equal((await sandboxCall(sandbox, 'removeacct', { user: 'bob' })).status, 200);
    assert.ok(!(await users()).includes(BOB_INFO.email));
  });
});
