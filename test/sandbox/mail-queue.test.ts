// Mail waiting in the queue (CONTRACT §10, "Tenants are isolated"): in `berth sandbox`, the
// account alice sends big messages to a destination that does not answer, from her PHP and by
// submission, as an account filling Postfix's queue (outside every disk quota) would. Her mail is
// refused once her budget (mail_queue_limit, 50 MB) waits; the queue holds about that much of
// hers and no more; bob's mail still goes; and once hers has gone, hers goes again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  inboxMessage,
  type RunningSandbox,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

const MB = 1_048_576;
const BUDGET = 50 * MB;
/** A host that never answers (TEST-NET-1): mail to it waits in the queue. */
const NOWHERE = 'nobody@[192.0.2.1]';
/** About 7.7 MB of body, under Postfix's message_size_limit (10,240,000 bytes). */
const BIG_LINES = 100_000;
/** Berth's grace for a message no listing showed (10 s), and a listing's interval (5 s), and one more. */
const COUNTED_AFTER_DELIVERY_MS = 16_000;

describe('mail waiting in the queue in the sandbox', () => {
  const dataDir = tempDir('berth-mail-queue-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const submit = (user: string, to: string, body: string) =>
    smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: user,
      password: `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`,
      from: `${user}@${user}.example`,
      to: [to],
      message: `From: ${user}@${user}.example\nTo: ${to}\nSubject: ${user} writes\n\n${body}`,
    });
  const big = `${'a'.repeat(76)}\n`.repeat(BIG_LINES);
  /** Each account's bytes and messages in Postfix's queue, by sender domain, as root lists them. */
  const queued = async () => {
    const listing = await running.exec(['/usr/sbin/postqueue', '-j']);
    assert.equal(listing.code, 0, listing.stderr);
    const usage = new Map<string, { bytes: number; messages: number }>();
    for (const line of listing.stdout.split('\n').filter(Boolean)) {
      const { sender, message_size } = JSON.parse(line) as { sender: string; message_size: number };
      const key = sender.slice(sender.lastIndexOf('@') + 1);
      const entry = usage.get(key) ?? { bytes: 0, messages: 0 };
      entry.bytes += message_size;
      entry.messages += 1;
      usage.set(key, entry);
    }
    return usage;
  };
  const fetch = (login: string, uid: number) => inboxMessage(sandbox, login, uid);
  const arrived = (login: string, uid: number) => arrivedMessage(sandbox, login, uid);
  /**
   * Postfix's queue emptied (root's postsuper), and Berth's next three listings taken, five seconds
   * apart: the first may have begun while postsuper was deleting and still show some of alice's
   * messages; the next still counts what the one before it showed (a listing misses a message
   * Postfix moves while it runs), the one after no longer.
   */
  const emptyQueue = async () => {
    assert.equal((await running.exec(['/usr/sbin/postsuper', '-d', 'ALL'])).code, 0);
    await sleep(17_000);
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('lets alice’s mail under her budget go, big or small', async () => {
    const small = await submit('alice', 'bob@bob.example', 'Hello bob.\n');
    assert.match(small.data ?? '', /^250 /, JSON.stringify(small));
    assert.match(await arrived('bob:Bob-pass-1234', 1), /Subject: alice writes/);
    const large = await submit('alice', 'bob@bob.example', big);
    assert.match(large.data ?? '', /^250 /, JSON.stringify(large));
    // Postfix hands it on at once: nothing of alice's stays waiting.
    for (let i = 0; i < 30 && (await queued()).has('alice.example'); i++) await sleep(1_000);
    assert.equal((await queued()).get('alice.example'), undefined);
    // Berth counts a message it let by until a listing begun ten seconds after shows it gone (one
    // delivered before any listing saw it): the next test starts once nothing of alice's is counted.
    await sleep(COUNTED_AFTER_DELIVERY_MS);
  });

  it('refuses alice’s submission once her mail to a host that does not answer fills her budget, and bob’s still goes', async () => {
    const replies: string[] = [];
    for (let i = 0; i < 12; i++) {
      const sent = await submit('alice', NOWHERE, big);
      replies.push((sent.data ?? sent.mail ?? '').slice(0, 3));
    }
    const accepted = replies.filter((code) => code === '250').length;
    assert.ok(accepted >= 5 && accepted <= 7, `accepted ${accepted}: ${replies}`);
    assert.ok(
      replies.slice(accepted).every((code) => code === '452'),
      `refused for now once full: ${replies}`,
    );
    const refused = await submit('alice', NOWHERE, big);
    assert.match(refused.data ?? '', /^452 4\.3\.1 Mail of alice waiting to be sent is at its limit/);
    const waiting = (await queued()).get('alice.example');
    assert.ok(waiting && waiting.bytes <= BUDGET, `alice has ${JSON.stringify(waiting)} waiting`);

    const bob = await submit('bob', 'alice@alice.example', 'Hello alice.\n');
    assert.match(bob.data ?? '', /^250 /, JSON.stringify(bob));
    assert.match(await arrived('alice:Alice-pass-1234', 1), /Subject: bob writes/);
    await emptyQueue();
    const again = await submit('alice', 'bob@bob.example', 'The queue has room again.\n');
    assert.match(again.data ?? '', /^250 /, JSON.stringify(again));
  });

  it('returns alice’s PHP mail to a host that does not answer once her budget waits, and never root’s', async () => {
    for (let i = 0; i < 10; i++) {
      const sent = await running.exec([
        '/usr/sbin/runuser',
        '-u',
        'alice',
        '--',
        '/usr/bin/php',
        '-r',
        `echo mail("${NOWHERE}", "php", str_repeat(str_repeat("a", 76) . "\\n", ${BIG_LINES}), "From: alice@alice.example", "-falice@alice.example") ? "sent" : "refused";`,
      ]);
      assert.equal(sent.stdout.trim().split('\n').at(-1), 'sent', sent.stderr);
    }
    // Postfix's pickup takes what postdrop wrote, and asks Berth's local milter about each.
    let waiting = { bytes: 0, messages: 0 };
    let picked = false;
    for (let i = 0; i < 60 && !picked; i++) {
      const maildrop = await running.exec(['/usr/bin/find', '/var/spool/postfix/maildrop', '-type', 'f']);
      waiting = (await queued()).get('alice.example') ?? { bytes: 0, messages: 0 };
      picked = maildrop.stdout.trim() === '';
      if (!picked) await sleep(1_000);
    }
    assert.ok(picked, 'every message left the maildrop: none is offered again and again');
    assert.ok(waiting.messages >= 5, `alice's first messages wait: ${JSON.stringify(waiting)}`);
    assert.ok(waiting.bytes <= BUDGET, `alice has ${JSON.stringify(waiting)} waiting`);
    // What did not fit came back to her: Postfix bounced what Berth's local milter refused.
    assert.match(
      await arrived('alice:Alice-pass-1234', 2),
      /Mail of alice waiting to be sent is at its limit/,
    );
    // One a minute comes back; the others over budget were dropped, leaving no bounce to wait.
    await sleep(3_000);
    assert.equal(fetch('alice:Alice-pass-1234', 3), '', 'a single message returned');
    // The server's own users' mail (a cron job's output, root's) is counted apart from the accounts'.
    const system = (await queued()).get('sandbox.test')?.messages ?? 0;
    const root = await running.exec([
      '/usr/bin/php',
      '-r',
      `echo mail("${NOWHERE}", "root", str_repeat("a", 1000)) ? "sent" : "refused";`,
    ]);
    assert.equal(root.stdout.trim(), 'sent');
    await sleep(3_000);
    const all = await queued();
    assert.equal(
      all.get('sandbox.test')?.messages,
      system + 1,
      `root's mail waits: ${JSON.stringify([...all])}`,
    );
    await emptyQueue();
  });
});
