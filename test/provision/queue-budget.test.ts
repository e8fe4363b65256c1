// The queue budget: whose mail a sender is, how much an account may have waiting in Postfix's
// queue, and what Berth's milters answer when it is over (CONTRACT §10: one account must not
// crowd out another).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CONTINUE, type Envelope, type MilterPolicy } from '../../src/provision/linux/mail/milter.ts';
import {
  keptSenderOwners,
  listQueue,
  queueBudget,
  queuedMessage,
  senderOwners,
  withQueueBudget,
} from '../../src/provision/linux/mail/queue-budget.ts';
import { ORIGINATING, submitted } from '../../src/provision/linux/mail/sender-policy.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

const LOCAL_SENDERS = 'alice alice, @alice.example\nbob bob, @bob.example\n';
const owner = senderOwners(LOCAL_SENDERS, 'host.example');
const MB = 1_048_576;

const envelope = (sender: string, size: number, macros: Record<string, string> = {}): Envelope => ({
  macros: new Map(Object.entries(macros)),
  clientAddress: '127.0.0.1',
  helo: 'localhost',
  sender,
  headers: [],
  size,
});
const login = (user: string) => ({ daemon_name: ORIGINATING, auth_authen: user });
const reply = (verdict: { action: string; reply?: string }) => verdict.reply ?? verdict.action;

/** A policy that lets everything by: the budget alone decides. */
const LET_BY: MilterPolicy = { mailFrom: () => CONTINUE, endOfMessage: () => CONTINUE };

describe('the queue budget', () => {
  it('knows an account’s mail by its domains and its login, bare or completed with myorigin, and no one else’s', () => {
    assert.equal(owner('alice@alice.example'), 'alice');
    assert.equal(owner('Info@Alice.Example'), 'alice');
    assert.equal(owner('alice'), 'alice');
    assert.equal(owner('alice@host.example'), 'alice');
    assert.equal(owner('bob@bob.example'), 'bob');
    for (const sender of [
      'root@host.example',
      'root',
      'www-data@host.example',
      'alice@elsewhere.example',
      '',
    ])
      assert.equal(owner(sender), null, sender);
  });

  it('keeps the owner of each sender while the local-senders table and the lists stay the same, and makes it again when either changes', () => {
    let table = LOCAL_SENDERS;
    let lists: string[] = [];
    let reads = 0;
    const owners = keptSenderOwners(
      () => {
        reads++;
        return table;
      },
      'host.example',
      () => lists,
    );
    const first = owners();
    assert.equal(owners(), first, 'the same table and lists: the same owner, not made again');
    assert.equal(reads, 2, 'the table is read at every ask: a change is never missed');
    assert.equal(first('carol@carol.example'), null);
    // The table made again with the same text: the same owner.
    table = LOCAL_SENDERS.split('\n').join('\n');
    assert.equal(owners(), first);
    table = `${LOCAL_SENDERS}carol carol, @carol.example\n`;
    const second = owners();
    assert.notEqual(second, first);
    assert.equal(second('carol@carol.example'), 'carol');
    lists = ['News@Alice.example'];
    const third = owners();
    assert.notEqual(third, second);
    assert.equal(third('news@alice.example'), "alice's mailing lists");
    lists = ['news@alice.example'];
    assert.equal(owners(), third, 'the same addresses in another case: the same owner');
  });

  it('reads postqueue -j’s lines as the sender’s mail and its recipients’, a bounce as its recipient’s, and skips what is none', () => {
    const listed = (sender: string, recipient: string) =>
      JSON.stringify({
        queue_name: 'deferred',
        queue_id: '4F2A1',
        arrival_time: 1700000000,
        message_size: 10485967,
        forced_expire: false,
        sender,
        recipients: [{ address: recipient, delay_reason: 'connect to 192.0.2.1[192.0.2.1]:25: timed out' }],
      });
    const alice = { id: '4F2A1', logins: ['alice'], size: 10485967 };
    assert.deepEqual(queuedMessage(listed('alice@alice.example', 'x@[192.0.2.1]'), owner), alice);
    assert.deepEqual(queuedMessage(listed('', 'alice@host.example'), owner), alice);
    // Waiting to reach alice's own mailbox (one she made refuse delivery): hers too.
    assert.deepEqual(queuedMessage(listed('bob@example.net', 'alice@alice.example'), owner), alice);
    assert.deepEqual(queuedMessage(listed('', 'someone@example.net'), owner), {
      id: '4F2A1',
      logins: [],
      size: 10485967,
    });
    // A mailing list's mail, out or back, and what waits to reach it, is alice's lists': never her own.
    const withList = senderOwners(LOCAL_SENDERS, 'host.example', new Set(['news@alice.example']));
    const news = { id: '4F2A1', logins: ["alice's mailing lists"], size: 10485967 };
    for (const [sender, recipient] of [
      ['news+bounces-3-x=[192.0.2.1]@alice.example', 'x@[192.0.2.1]'],
      ['', 'news+bounces-3-x=[192.0.2.1]@Alice.example'],
      ['bob@bob.example', 'news@alice.example'],
    ] as const) {
      const expected =
        sender === 'bob@bob.example' ? { ...news, logins: ['bob', "alice's mailing lists"] } : news;
      assert.deepEqual(queuedMessage(listed(sender, recipient), withList), expected, sender);
    }
    assert.deepEqual(queuedMessage(listed('newsletter@alice.example', 'x@[192.0.2.1]'), withList), alice);
    assert.equal(queuedMessage('postqueue: warning: Mail system is down', owner), null);
    assert.equal(queuedMessage('{"sender": "alice@alice.example"}', owner), null);
  });

  it('allows an account’s mail until its bytes or its messages are spent', () => {
    const budget = queueBudget({ bytes: 50 * MB, messages: 3 });
    assert.equal(budget.allows('alice', 0), true);
    // Larger than the whole budget, but nothing else of alice's waits: it goes.
    assert.equal(budget.allows('alice', 60 * MB), true);
    budget.accepted('alice', 45 * MB, 'Q1');
    assert.equal(budget.allows('alice', 0), true);
    assert.equal(budget.allows('alice', 5 * MB), true);
    assert.equal(budget.allows('alice', 6 * MB), false, 'over the bytes at the end of the message');
    budget.accepted('alice', 5 * MB, 'Q2');
    assert.equal(budget.allows('alice', 0), false, 'at the bytes: refused at MAIL FROM');
    assert.deepEqual(budget.usage('alice'), { bytes: 50 * MB, messages: 2 });
    assert.equal(budget.allows('bob', 10 * MB), true, 'bob has a budget of his own');
    budget.accepted('bob', 1, 'Q3');
    budget.accepted('bob', 1, 'Q4');
    assert.equal(budget.allows('bob', 1), true);
    budget.accepted('bob', 1, 'Q5');
    assert.equal(budget.allows('bob', 1), false, 'at the messages');
  });

  it('counts what it accepted until a listing shows it by its queue ID, or one begun well after it does not', () => {
    let now = 100_000;
    const budget = queueBudget({ bytes: 10 * MB, messages: null }, () => now);
    budget.accepted('alice', 4 * MB, 'A1');
    budget.accepted('alice', 1 * MB, 'A2');
    now = 110_000;
    budget.accepted('alice', 3 * MB, 'A3');
    budget.accepted('alice', 2 * MB, 'A4');
    // A listing begun at 111,000 (ten seconds after A2) shows A1 and A4 (each counted once); A2
    // was delivered before it; A3, accepted less than ten seconds before it, is not in it yet.
    const listed = (at: number, ...messages: [string, number][]) => ({
      messages: new Map(messages.map(([id, size]) => [id, { logins: ['alice'], size }])),
      takenAt: at,
    });
    budget.observe(listed(111_000, ['A1', 4 * MB], ['A4', 2 * MB]));
    assert.deepEqual(budget.usage('alice'), { bytes: 9 * MB, messages: 3 });
    now = 122_000;
    // Everything delivered: the listing after it finds nothing of alice's, and counts A1 and A4,
    // which the last one showed, once more (a listing misses a message Postfix moves while it
    // runs); the next one says they are gone.
    budget.observe(listed(121_000));
    assert.deepEqual(budget.usage('alice'), { bytes: 6 * MB, messages: 2 });
    budget.observe(listed(126_000));
    assert.deepEqual(budget.usage('alice'), { bytes: 0, messages: 0 });
    assert.equal(budget.allows('alice', 9 * MB), true);
  });

  it('keeps counting a message one listing misses while Postfix moves it from queue to queue', () => {
    let now = 100_000;
    const budget = queueBudget({ bytes: 10 * MB, messages: null }, () => now);
    const listed = (...ids: string[]) => ({
      messages: new Map(ids.map((id) => [id, { logins: ['alice'], size: 5 * MB }])),
      takenAt: now,
    });
    budget.accepted('alice', 5 * MB, 'A1');
    budget.accepted('alice', 5 * MB, 'A2');
    now += 5_000;
    budget.observe(listed('A1', 'A2'));
    assert.equal(budget.allows('alice', 1), false);
    // The next listing read the active queue before qmgr moved A2 there, and the incoming one after.
    now += 5_000;
    budget.observe(listed('A1'));
    assert.deepEqual(budget.usage('alice'), { bytes: 10 * MB, messages: 2 });
    assert.equal(budget.allows('alice', 1), false, 'A2 still waits');
    now += 5_000;
    budget.observe(listed('A1', 'A2'));
    assert.equal(budget.allows('alice', 1), false);
    // A2 delivered: counted for one listing more, then no longer.
    now += 5_000;
    budget.observe(listed('A1'));
    now += 5_000;
    budget.observe(listed('A1'));
    assert.deepEqual(budget.usage('alice'), { bytes: 5 * MB, messages: 1 });
    assert.equal(budget.allows('alice', 5 * MB), true);
  });

  it('on SMTP holds back mail for an account whose mail waits at its limit, and counts what reaches it', async () => {
    const limits = { bytes: 20 * MB, messages: null };
    const budget = queueBudget(limits);
    const policy = withQueueBudget(LET_BY, budget, () => owner, submitted);
    const to = (recipient: string, size: number) => ({
      ...envelope('x@example.net', size),
      recipients: [recipient],
    });
    // From outside, to alice's own mailbox (one she made refuse delivery): counted as hers.
    assert.equal(reply(await policy.endOfMessage(to('alice@alice.example', 15 * MB))), 'continue');
    assert.deepEqual(budget.usage('alice'), { bytes: 15 * MB, messages: 1 });
    assert.equal(
      reply(await policy.endOfMessage(to('alice@alice.example', 6 * MB))),
      '452 4.2.2 Mail for alice waiting to be delivered is at its limit (20 MB); try again later',
    );
    // Mail for bob, or for no account here, goes on.
    assert.equal(reply(await policy.endOfMessage(to('bob@bob.example', 6 * MB))), 'continue');
    assert.equal(reply(await policy.endOfMessage(to('x@example.org', 6 * MB))), 'continue');
  });

  it('tempfails an account over budget on submission, at MAIL FROM and at the end, and counts what it lets by', async () => {
    const limits = { bytes: 20 * MB, messages: null };
    const budget = queueBudget(limits);
    const policy = withQueueBudget(LET_BY, budget, () => owner, submitted);
    assert.equal(policy.readsBody, true);
    assert.equal(
      reply(await policy.mailFrom(envelope('alice@alice.example', 0, login('alice')))),
      'continue',
    );
    assert.equal(
      reply(await policy.endOfMessage(envelope('alice@alice.example', 15 * MB, login('alice')))),
      'continue',
    );
    const tooBig = await policy.endOfMessage(envelope('alice@alice.example', 6 * MB, login('alice')));
    assert.deepEqual(tooBig, {
      action: 'tempfail',
      reply: '452 4.3.1 Mail of alice waiting to be sent is at its limit (20 MB); try again later',
    });
    await policy.endOfMessage(envelope('alice@alice.example', 5 * MB, login('alice')));
    assert.equal(
      reply(await policy.mailFrom(envelope('alice@alice.example', 0, login('alice')))),
      '452 4.3.1 Mail of alice waiting to be sent is at its limit (20 MB); try again later',
    );
    // bob's submission, and port 25's mail from outside (even naming alice's domain), go on.
    assert.equal(reply(await policy.mailFrom(envelope('bob@bob.example', 0, login('bob')))), 'continue');
    assert.equal(reply(await policy.mailFrom(envelope('alice@alice.example', 0))), 'continue');
    assert.equal(reply(await policy.endOfMessage(envelope('alice@alice.example', 5 * MB))), 'continue');
    assert.deepEqual(budget.usage('alice'), { bytes: 20 * MB, messages: 2 });
  });

  it('on mail from sendmail, returns an account’s mail over budget to it once a minute, drops the rest, and never refuses root’s or the system’s own', async () => {
    const limits = { bytes: null, messages: 1 };
    let clock = 1_000_000;
    const budget = queueBudget(limits, () => clock);
    const local = withQueueBudget(
      LET_BY,
      budget,
      () => owner,
      () => true,
      'reject',
      () => clock,
    );
    const returned =
      '550 5.3.1 Mail of alice waiting to be sent is at its limit (1 message); this message is returned';
    assert.equal(reply(await local.endOfMessage(envelope('alice@host.example', 100))), 'continue');
    assert.equal(reply(await local.mailFrom(envelope('alice@host.example', 0))), returned);
    // Each return is a bounce in the queue: a loop of sendmail gets one a minute, the rest dropped.
    for (const sender of ['alice@alice.example', 'alice', 'alice@host.example'])
      assert.equal(reply(await local.mailFrom(envelope(sender, 0))), 'discard', sender);
    clock += 59_000;
    assert.equal(reply(await local.endOfMessage(envelope('alice', 10))), 'discard');
    clock += 1_000;
    assert.equal(reply(await local.mailFrom(envelope('alice@alice.example', 0))), returned);
    for (const sender of ['root@host.example', 'www-data@host.example', ''])
      for (let i = 0; i < 3; i++) {
        assert.equal(reply(await local.mailFrom(envelope(sender, 0))), 'continue', sender);
        assert.equal(reply(await local.endOfMessage(envelope(sender, 10 * MB))), 'continue', sender);
      }
  });

  it('answers first with the refusal of the policy it wraps', async () => {
    const limits = { bytes: 1, messages: null };
    const refusing = {
      mailFrom: () => ({
        action: 'reject' as const,
        reply: '553 5.7.1 alice may not send as <ceo@bob.example>',
      }),
      endOfMessage: () => CONTINUE,
    };
    const policy = withQueueBudget(
      refusing,
      queueBudget(limits),
      () => owner,
      () => true,
    );
    assert.equal(
      reply(await policy.mailFrom(envelope('ceo@bob.example', 0, login('alice')))),
      '553 5.7.1 alice may not send as <ceo@bob.example>',
    );
  });

  it('learns each account’s waiting mail from a listing of the queue', async () => {
    const listing = join(tempDir('berth-queue-'), 'postqueue.json');
    let id = 0;
    const line = (sender: string, size: number) =>
      JSON.stringify({
        queue_name: 'deferred',
        queue_id: `A${++id}`,
        message_size: size,
        sender,
        recipients: [],
      });
    writeFileSync(
      listing,
      [
        line('alice@alice.example', 10 * MB),
        line('alice@host.example', 2 * MB),
        line('root@host.example', 30 * MB),
        line('', 5_000),
        JSON.stringify({
          queue_id: 'B1',
          message_size: 3_000,
          sender: '',
          recipients: [{ address: 'bob@bob.example' }],
        }),
        JSON.stringify({ message_size: 3_000, sender: 'bob@bob.example', recipients: [] }),
        'not json',
        line('bob@bob.example', 1_000),
        '',
      ].join('\n'),
    );
    const budget = queueBudget({ bytes: 12 * MB, messages: null });
    // As Berth lists the queue: through its spawner, read as it comes.
    const runner = execRunner();
    await listQueue(runner.stream(['/usr/bin/cat', listing]), budget, owner);
    assert.deepEqual(budget.usage('alice'), { bytes: 12 * MB, messages: 2 });
    assert.deepEqual(budget.usage('bob'), { bytes: 4_000, messages: 2 });
    assert.deepEqual(budget.usage('root'), { bytes: 0, messages: 0 });
    assert.equal(budget.allows('alice', 0), false);
    await assert.rejects(listQueue(runner.stream(['/usr/bin/false']), budget, owner), /false failed/);
    assert.deepEqual(
      budget.usage('alice'),
      { bytes: 12 * MB, messages: 2 },
      'a failed listing changes nothing',
    );
  });
});
