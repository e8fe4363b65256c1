// Mailboxes and forwarders in the sandbox (CONTRACT §14): the holder makes a mailbox on the customer
// API; mail sent to it arrives and is read over IMAP with its whole address and its own password;
// Dovecot holds it to its own quota; it sends through submission, signed, as its own address
// alone; a forwarder's mail arrives at its target; the neighbour account cannot log in to it;
// suspension refuses its login and unsuspension restores it; removal ends it and takes its mail.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  inboxMessage,
  mailCurl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

const INFO = 'info@alice.example';
const INFO_PASSWORD = 'Info-pass-5678';

describe('mailboxes and forwarders in the sandbox', () => {
  const dataDir = tempDir('berth-mailboxes-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** An operation of the holder's, called by the holder on the customer API with its password. */
  const asHolder = (user: string, password: string, operation: string, params: Record<string, string>) =>
    sandboxHolderCall(sandbox, { user, password }, operation, params);
  const alice = (operation: string, params: Record<string, string>) =>
    asHolder('alice', 'Alice-pass-1234', operation, params);
  const inbound = (to: string, subject: string) =>
    smtpSend(sandbox, {
      port: sandbox.smtp_port,
      from: 'friend@example.org',
      to: [to],
      message: `From: friend@example.org\nTo: ${to}\nSubject: ${subject}\n\nHello ${to}.\n`,
    });
  const submitAsInfo = (from: string) =>
    smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: INFO,
      password: INFO_PASSWORD,
      from,
      to: ['bob@bob.example'],
      message: `From: ${from}\nTo: bob@bob.example\nSubject: from info\n\nSigned by alice.example.\n`,
    });

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('a mailbox made on the customer API receives mail, read over IMAP with its address and password', async () => {
    const made = await alice('add_mailbox', { email: INFO, password: INFO_PASSWORD, quota: '50' });
    assert.equal(made.status, 200, made.body.info);
    assert.equal((made.body.data as { email: string }).email, INFO);
    const sent = await inbound(INFO, 'to info');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    assert.match(await arrivedMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), /Hello info@alice\.example/);
    // Its Maildir is in alice's home, alice's; the account's own mailbox got nothing.
    const owner = await running.exec([
      '/usr/bin/stat',
      '-c',
      '%U %a',
      '/home/alice/mail/alice.example/info/Maildir',
    ]);
    assert.equal(owner.stdout.trim(), 'alice 700', owner.stderr);
    assert.equal(inboxMessage(sandbox, 'alice:Alice-pass-1234', 1), '');
    // Its own quota, as Dovecot enforces it.
    const quota = mailCurl(sandbox, sandbox.imap_port, [
      `imap://sandbox.test:${sandbox.imap_port}/`,
      '-u',
      `${INFO}:${INFO_PASSWORD}`,
      '-X',
      'GETQUOTAROOT INBOX',
    ]);
    assert.match(quota.body, /STORAGE \d+ 51200\b/, quota.body);
  });

  it('Dovecot holds the mailbox to its quota, as changed', async () => {
    const changed = await alice('change_mailbox_quota', { email: INFO, quota: '1' });
    assert.equal(changed.status, 200, changed.body.info);
    const append = (name: string, size: number) => {
      const path = join(dataDir, name);
      writeFileSync(path, `From: info@alice.example\r\nSubject: ${name}\r\n\r\n${'x'.repeat(size)}\r\n`);
      return mailCurl(sandbox, sandbox.imap_port, [
        `imap://sandbox.test:${sandbox.imap_port}/INBOX`,
        '-u',
        `${INFO}:${INFO_PASSWORD}`,
        '-T',
        path,
      ]);
    };
    assert.equal(append('large', 2 * 1024 * 1024).ok, false);
    assert.equal(append('small', 100).ok, true);
  });

  it('the mailbox sends through submission as its own address, signed, and as no other', async () => {
    const sent = await submitAsInfo(INFO);
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    assert.match(
      await arrivedMessage(sandbox, 'bob:Bob-pass-1234', 1),
      /DKIM-Signature:[\s\S]*\bd=alice\.example;/,
    );
    const other = await submitAsInfo('alice@alice.example');
    assert.match(other.mail ?? '', /^553/, JSON.stringify(other));
  });

  it("a forwarder's mail arrives at its target", async () => {
    const made = await alice('add_forwarder', { email: 'sales@alice.example', to: 'bob@bob.example' });
    assert.equal(made.status, 200, made.body.info);
    const sent = await inbound('sales@alice.example', 'to sales');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    assert.match(await arrivedMessage(sandbox, 'bob:Bob-pass-1234', 2), /Hello sales@alice\.example/);
  });

  it('the neighbour can neither log in to the mailbox nor touch it', async () => {
    for (const login of [`${INFO}:Bob-pass-1234`, 'bob:Info-pass-5678', `${INFO}:Alice-pass-1234`])
      assert.equal(inboxMessage(sandbox, login, 1), '', login);
    // Dovecot looks logins up in SQL: a login written as SQL that would find the mailbox's row
    // finds nobody's, even with the mailbox's own password.
    for (const login of [
      `nobody' UNION SELECT password, user FROM logins WHERE login = '${INFO}`,
      `nobody'/**/UNION/**/SELECT/**/password,user/**/FROM/**/logins/**/WHERE/**/login='${INFO}`,
    ])
      assert.equal(inboxMessage(sandbox, `${login}:${INFO_PASSWORD}`, 1), '', login);
    const removal = await asHolder('bob', 'Bob-pass-1234', 'remove_mailbox', { email: INFO });
    assert.equal(removal.status, 400);
    assert.equal((removal.body.data as { code: string }).code, 'object_not_found');
    const peek = await running.exec(['/usr/sbin/runuser', '-u', 'bob', '--', '/bin/ls', '/home/alice/mail']);
    assert.notEqual(peek.code, 0);
  });

  it('mail keeps arriving at once while another account is suspended: no delivery kept back, no reload', async () => {
    const log = async () => (await running.exec(['/usr/bin/cat', '/var/log/sandbox/postfix.log'])).stdout;
    const from = (await log()).length;
    const since = async () => (await log()).slice(from);
    const delivered = (text: string) =>
      text.split('\n').filter((line) => line.includes(`to=<${INFO}>`) && line.includes('status=sent')).length;
    // Each message on its way to the mailbox (a user lookup of Dovecot's) while bob's logins change.
    for (let i = 0; i < 12; i++)
      await Promise.all([
        inbound(INFO, `while bob changes ${i}`),
        i % 2 === 0
          ? sandboxCall(sandbox, 'suspendacct', { user: 'bob', reason: 'unpaid' })
          : sandboxCall(sandbox, 'unsuspendacct', { user: 'bob' }),
      ]);
    // Delivered within seconds; one kept back would come again only after five minutes.
    for (let i = 0; i < 150 && delivered(await since()) < 12; i++)
      await new Promise((resolve) => setTimeout(resolve, 200));
    const text = await since();
    assert.equal(delivered(text), 12, text);
    assert.doesNotMatch(text, /status=deferred/);
    // Suspensions change no table of Postfix's: it was not reloaded for them.
    assert.doesNotMatch(text, /postfix\/master.*reload/);
  });

  it('suspension refuses its login, unsuspension restores it, and removal ends it', async () => {
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'unpaid' })).status,
      200,
    );
    assert.equal(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), '');
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' })).status, 200);
    assert.match(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), /Hello info@alice\.example/);
    const removed = await alice('remove_mailbox', { email: INFO });
    assert.equal(removed.status, 200, removed.body.info);
    assert.equal(inboxMessage(sandbox, `${INFO}:${INFO_PASSWORD}`, 1), '');
    const gone = await running.exec(['/usr/bin/test', '-e', '/home/alice/mail/alice.example/info']);
    assert.equal(gone.code, 1);
    const bounced = await inbound(INFO, 'to nobody');
    assert.doesNotMatch((bounced.rcpt ?? []).join(' ') + (bounced.data ?? ''), /^250/);
  });
});
