// A mailing list's mail waiting in the queue (CONTRACT §10, "Tenants are isolated"): in `berth
// sandbox`, alice's list has members at a host that never answers, and the neighbour bob, a member,
// posts big messages to it over and over, as anyone who knows one member's address could. Each
// post fans out to the members and waits in Postfix's queue. The list's mail stops at the budget of
// alice's lists (mail_queue_lists_limit, 20 MB) and is kept by mlmmj for later, and alice's own
// submission and PHP mail still go, to a host that never answers too: her budget is hers alone.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { type RunningSandbox, sandboxHolderCall, sandboxWithAccounts, smtpSend } from '../process.ts';

const MB = 1_048_576;
const LIST_BUDGET = 20 * MB;
const LIST = 'news@alice.example';
const DIR = '/var/spool/berth-lists/alice.example_news';
/**
 * Members at a host that never answers (TEST-NET-1): the list's mail to them waits in the queue.
 * Named by its address without brackets (mlmmj puts the member's address in its envelope sender,
 * where `[` is not taken); Postfix is told to read it as the host `[192.0.2.1]`.
 */
const DEAD_MEMBERS = Array.from({ length: 6 }, (_, i) => `member${i}@192.0.2.1`);
/** About 1.5 MB of body a post: each post puts some 9 MB in the queue. */
const POST = `${'p'.repeat(76)}\n`.repeat(20_000);
/** About 7.7 MB of alice's own. */
const BIG = `${'a'.repeat(76)}\n`.repeat(100_000);
const NOWHERE = 'nobody@[192.0.2.1]';

describe('a mailing list’s mail waiting in the queue in the sandbox', () => {
  const dataDir = tempDir('berth-list-queue-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const submit = (user: string, to: string, subject: string, body: string) =>
    smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: user,
      password: `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`,
      from: `${user}@${user}.example`,
      to: [to],
      message: `From: ${user}@${user}.example\nTo: ${to}\nSubject: ${subject}\n\n${body}`,
    });
  /** Bytes and messages in Postfix's queue sent by the list (its bounce addresses), and alice's. */
  const queued = async () => {
    const listing = await running.exec(['/usr/sbin/postqueue', '-j']);
    assert.equal(listing.code, 0, listing.stderr);
    const usage = { list: { bytes: 0, messages: 0 }, alice: { bytes: 0, messages: 0 } };
    for (const line of listing.stdout.split('\n').filter(Boolean)) {
      const { sender, message_size } = JSON.parse(line) as { sender: string; message_size: number };
      const whose = /^news\+/.test(sender)
        ? usage.list
        : sender === 'alice@alice.example'
          ? usage.alice
          : null;
      if (!whose) continue;
      whose.bytes += message_size;
      whose.messages += 1;
    }
    return usage;
  };
  /** The files mlmmj keeps of what it could not send yet (its queue and requeue directories). */
  const kept = async () =>
    (await running.exec(['/usr/bin/find', `${DIR}/queue`, `${DIR}/requeue`, '-type', 'f'])).stdout
      .split('\n')
      .filter(Boolean);
  /** Waits until the list's mail in the queue stops growing, and gives it. */
  const settled = async () => {
    let last = -1;
    let now = (await queued()).list.bytes;
    for (let i = 0; i < 20 && now !== last; i++) {
      await sleep(3_000);
      last = now;
      now = (await queued()).list.bytes;
    }
    return queued();
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
    const alice = (operation: string, params: Record<string, string>) =>
      sandboxHolderCall(sandbox, { user: 'alice', password: 'Alice-pass-1234' }, operation, params);
    const made = await alice('add_mailing_list', { email: LIST, owner: 'alice@alice.example' });
    assert.equal(made.status, 200, made.body.info);
    const bob = await alice('add_list_member', { list: LIST, email: 'bob@bob.example' });
    assert.equal(bob.status, 200, bob.body.info);
    // Members at a host named by its address, which the holder's API does not take: put as
    // mlmmj-sub would (as the lists user), as someone subscribing by mail from such a host would be.
    for (const command of [
      ['/usr/sbin/postconf', '-e', 'resolve_numeric_domain=yes'],
      ['/usr/sbin/postfix', 'reload'],
    ])
      assert.equal((await running.exec(command)).code, 0, command.join(' '));
    for (const member of DEAD_MEMBERS) {
      const sub = await running.exec([
        '/usr/sbin/runuser',
        '-u',
        'berth-lists',
        '--',
        '/usr/bin/mlmmj-sub',
        '-L',
        DIR,
        '-a',
        member,
        '-f',
        '-q',
        '-s',
      ]);
      assert.equal(sub.code, 0, sub.stderr);
    }
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('stops the list’s mail at the budget of alice’s lists when a member’s posts fan out to hosts that never answer, and keeps the rest for later', async () => {
    // Seven posts would put some 63 MB of the list's in the queue: more than alice's own 50 MB.
    const replies: string[] = [];
    for (let i = 0; i < 7; i++) {
      const sent = await submit('bob', LIST, `post ${i}`, POST);
      replies.push(sent.data ?? sent.mail ?? '');
      await sleep(2_000);
    }
    const accepted = replies.filter((reply) => reply.startsWith('250 ')).length;
    assert.ok(accepted >= 2 && accepted <= 5, `accepted ${accepted}: ${replies}`);
    // Once the lists' budget is spent, a new post waits with its sender (its client tries again).
    // A post is counted for a few seconds after mlmmj took it (it never waits in the queue itself),
    // so one more may be let by once that count ends, if the budget has room for it.
    const refused = replies.filter((reply) => !reply.startsWith('250 '));
    assert.ok(refused.length > 0, `every post was accepted: ${replies}`);
    for (const reply of refused)
      assert.match(
        reply,
        /^452 4\.2\.2 Mail for alice's mailing lists waiting to be delivered is at its limit/,
      );
    const { list } = await settled();
    assert.ok(list.messages >= 6, `the list's first posts wait: ${JSON.stringify(list)}`);
    assert.ok(list.bytes <= LIST_BUDGET, `the list has ${JSON.stringify(list)} waiting`);
    // What was refused for now (452 at the lists' smtpd) mlmmj keeps to send again: not lost.
    assert.notDeepEqual(await kept(), [], 'mlmmj keeps the posts it could not send yet');
    const log = await running.exec([
      '/usr/bin/grep',
      '-c',
      "Mail of alice's mailing lists waiting to be sent is at its limit",
      '/var/log/sandbox/postfix.log',
    ]);
    assert.ok(Number(log.stdout.trim()) > 0, 'the lists’ smtpd refused the list’s mail over its budget');
  });

  it('lets alice’s own submission and PHP mail go while her lists’ budget is full', async () => {
    // Big messages of hers to a host that never answers: they wait, counted in her budget alone.
    for (let i = 0; i < 4; i++) {
      const sent = await submit('alice', NOWHERE, `alice ${i}`, BIG);
      assert.match(sent.data ?? '', /^250 /, `message ${i}: ${JSON.stringify(sent)}`);
    }
    const php = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/usr/bin/php',
      '-r',
      'echo mail("bob@bob.example", "from php", "Hello bob.", "From: alice@alice.example", "-falice@alice.example") ? "sent" : "refused";',
    ]);
    assert.equal(php.stdout.trim().split('\n').at(-1), 'sent', php.stderr);
    const { alice, list } = await queued();
    assert.ok(alice.messages >= 4, `alice's own mail waits: ${JSON.stringify(alice)}`);
    assert.ok(list.bytes <= LIST_BUDGET, `the list has ${JSON.stringify(list)} waiting`);
    // Her PHP mail was not returned to her as over budget.
    const returned = await running.exec([
      '/usr/bin/grep',
      '-c',
      'Mail of alice waiting',
      '/var/log/sandbox/postfix.log',
    ]);
    assert.equal(returned.stdout.trim(), '0');
  });

  it('sends the list’s kept mail once the queue has room again', async () => {
    assert.equal((await running.exec(['/usr/sbin/postsuper', '-d', 'ALL'])).code, 0);
    // mlmmj-maintd runs every five minutes from cron: run it here until Berth has counted the
    // emptied queue (its listing is taken every five seconds) and the kept mail goes.
    let list = (await queued()).list;
    for (let i = 0; i < 20 && list.messages === 0; i++) {
      await sleep(3_000);
      const maintd = await running.exec([
        '/usr/sbin/runuser',
        '-u',
        'berth-lists',
        '--',
        '/usr/bin/mlmmj-maintd',
        '-F',
        '-L',
        DIR,
      ]);
      assert.equal(maintd.code, 0, maintd.stderr);
      list = (await settled()).list;
    }
    assert.ok(list.messages > 0, `the list's kept mail is sent again: ${JSON.stringify(list)}`);
    assert.ok(list.bytes <= LIST_BUDGET, `the list has ${JSON.stringify(list)} waiting`);
  });
});
