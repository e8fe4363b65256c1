// Berth's sender-policy milter: the protocol as Postfix speaks it (over a real Unix socket), and who
// may send as whom on submission and on port 25.
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  CONTINUE,
  type Envelope,
  packet,
  packetReader,
  serveMilter,
} from '../../src/provision/linux/mail/milter.ts';
import { senderOwners } from '../../src/provision/linux/mail/queue-budget.ts';
import {
  fromAddresses,
  localSenderPolicy,
  namedDomains,
  ORIGINATING,
  parseSenders,
  senderPolicy,
} from '../../src/provision/linux/mail/sender-policy.ts';
import { tempDir } from '../helpers.ts';

const SENDERS = [
  '@alice.example alice, alice@alice.example',
  '@bob.example bob, bob@bob.example',
  'sales@carol.example carol-sales',
  '',
].join('\n');

/** The server's own address, which every hosted domain's SPF allows. */
const OWN = '198.51.100.7';
/** SPF as the zones have it: hosted domains pass from 127.0.0.1 (another server) and OWN. */
const spfChecks: string[] = [];
/** Dovecot's logins as they are now: a suspension takes an account's out. */
const logins = new Set(['alice', 'alice@alice.example', 'bob', 'bob@bob.example', 'carol-sales']);
const policy = senderPolicy({
  senders: () => parseSenders(SENDERS),
  mayLogIn: (login) => logins.has(login.toLowerCase()),
  spfPasses: async (sender, ip) => {
    spfChecks.push(`${sender} ${ip}`);
    return ip === '127.0.0.1' || ip === OWN ? 'pass' : ip === '192.0.2.9' ? 'temperror' : 'fail';
  },
  isOwnAddress: (ip) => ip === OWN,
});

const z = (...parts: string[]) => Buffer.from(parts.map((p) => `${p}\0`).join(''), 'latin1');
const macros = (stage: string, pairs: Record<string, string>) =>
  packet('D', Buffer.concat([Buffer.from(stage), z(...Object.entries(pairs).flat())]));
const connectPacket = (address: string) => {
  const port = Buffer.alloc(2);
  port.writeUInt16BE(25_000);
  return packet('C', Buffer.concat([z('client.example'), Buffer.from('4'), port, z(address)]));
};
const optneg = () => {
  const data = Buffer.alloc(12);
  data.writeUInt32BE(6, 0);
  data.writeUInt32BE(0x1ff, 4);
  data.writeUInt32BE(0x1fffff, 8);
  return packet('O', data);
};

/** Postfix's side of one milter connection: sends packets, reads each answer in turn. */
async function postfixTalking(socketPath: string) {
  const socket = connect(socketPath);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const answers: { command: string; data: Buffer }[] = [];
  let wake = () => {};
  socket.on(
    'data',
    packetReader((command, data) => {
      answers.push({ command, data });
      wake();
    }),
  );
  const next = async () => {
    while (answers.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return answers.shift()!;
  };
  /** Sends a packet and returns its answer as `c` (continue) or the reply text. */
  const ask = async (sent: Buffer) => {
    socket.write(sent);
    const { command, data } = await next();
    return command === 'y' ? data.toString('latin1').replace(/\0$/, '') : command;
  };
  return { socket, ask, send: (sent: Buffer) => socket.write(sent), next };
}

describe('the milter protocol', () => {
  it('negotiates version 6 without the body, then answers every stage in order on one socket', async () => {
    const socketPath = join(tempDir('berth-milter-'), 'policy.sock');
    const errors: unknown[] = [];
    const { server } = serveMilter(policy, (error) => errors.push(error));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const postfix = await postfixTalking(socketPath);
      postfix.send(optneg());
      const negotiated = await postfix.next();
      assert.equal(negotiated.command, 'O');
      assert.deepEqual(
        [negotiated.data.readUInt32BE(0), negotiated.data.readUInt32BE(4), negotiated.data.readUInt32BE(8)],
        [6, 0, 0x10],
      );
      // A submission: alice, logged in, sending as herself then with bob's From.
      postfix.send(macros('C', { j: 'mail.example', '{daemon_name}': ORIGINATING }));
      assert.equal(await postfix.ask(connectPacket('127.0.0.1')), 'c');
      assert.equal(await postfix.ask(packet('H', z('client.example'))), 'c');
      postfix.send(macros('M', { '{auth_authen}': 'alice', '{auth_type}': 'PLAIN' }));
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>', 'SIZE=100'))), 'c');
      assert.equal(await postfix.ask(packet('R', z('<someone@example.net>'))), 'c');
      assert.equal(await postfix.ask(packet('L', z('From', 'CEO <ceo@bob.example>'))), 'c');
      assert.equal(await postfix.ask(packet('N')), 'c');
      assert.equal(await postfix.ask(packet('E')), '550 5.7.1 alice may not send as From <ceo@bob.example>');
      // The next message of the same connection starts without the last one's headers.
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('L', z('From', 'Alice <alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('E')), 'c');
      // An aborted message's headers are forgotten too.
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('L', z('From', 'alice@alice.example'))), 'c');
      postfix.send(packet('A'));
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('L', z('From', 'alice@alice.example'))), 'c');
      assert.equal(await postfix.ask(packet('E')), 'c');
      // A new SMTP connection on the same socket: port 25, no login, from another address.
      postfix.send(packet('K'));
      postfix.send(macros('C', { '{daemon_name}': 'mail.example' }));
      assert.equal(await postfix.ask(connectPacket('127.0.0.2')), 'c');
      assert.equal(
        await postfix.ask(packet('M', z('<ceo@bob.example>'))),
        '550 5.7.23 sender domain bob.example is hosted here and SPF does not pass for you',
      );
      postfix.send(packet('Q'));
      await new Promise((resolve) => postfix.socket.once('close', resolve));
      assert.deepEqual(errors, []);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('reads a header’s 8-bit bytes as UTF-8, as a reader shows them, and Latin-1 when they are not', async () => {
    const socketPath = join(tempDir('berth-milter-'), 'policy.sock');
    const seen: string[] = [];
    const reading = {
      mailFrom: () => policy.mailFrom({} as never),
      endOfMessage: (envelope: Envelope) => {
        seen.push(...envelope.headers.map((h) => h.value));
        return policy.endOfMessage(envelope);
      },
    };
    const { server } = serveMilter(reading, (error) => assert.fail(String(error)));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const postfix = await postfixTalking(socketPath);
      assert.equal(await postfix.ask(connectPacket('127.0.0.2')), 'c');
      const from = '"ceo＠bob.example" <someone@example.net>';
      assert.equal(await postfix.ask(packet('L', Buffer.from(`From\0${from}\0`, 'utf8'))), 'c');
      assert.equal(await postfix.ask(packet('L', Buffer.from('Subject\0Caf\xe9\0', 'latin1'))), 'c');
      assert.equal(
        await postfix.ask(packet('E')),
        '550 5.7.23 header From domain bob.example is hosted here and SPF does not pass for you',
      );
      assert.deepEqual(seen, [from, 'Café']);
      postfix.socket.destroy();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('asks for the body when the policy counts it, and sizes the message by its headers and body', async () => {
    const socketPath = join(tempDir('berth-milter-'), 'policy.sock');
    const sizes: number[] = [];
    const counting = {
      readsBody: true,
      mailFrom: () => CONTINUE,
      endOfMessage: (envelope: Envelope) => {
        sizes.push(envelope.size);
        return CONTINUE;
      },
    };
    const { server } = serveMilter(counting, (error) => assert.fail(String(error)));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const postfix = await postfixTalking(socketPath);
      postfix.send(optneg());
      assert.equal((await postfix.next()).data.readUInt32BE(8), 0, 'no step skipped');
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('L', z('Subject', 'hi'))), 'c');
      assert.equal(await postfix.ask(packet('N')), 'c');
      assert.equal(await postfix.ask(packet('B', Buffer.alloc(65_535, 'a'))), 'c');
      assert.equal(await postfix.ask(packet('B', Buffer.from('end\r\n'))), 'c');
      assert.equal(await postfix.ask(packet('E')), 'c');
      // The next message starts from nothing.
      assert.equal(await postfix.ask(packet('M', z('<alice@alice.example>'))), 'c');
      assert.equal(await postfix.ask(packet('E')), 'c');
      assert.deepEqual(sizes, ['Subject: hi\r\n'.length + 65_535 + 5, 0]);
      postfix.socket.destroy();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('tempfails a message when the policy fails, and drops a connection that sends no milter packet', async () => {
    const socketPath = join(tempDir('berth-milter-'), 'policy.sock');
    const errors: unknown[] = [];
    const failing = {
      mailFrom: () => {
        throw new Error('senders table unreadable');
      },
      endOfMessage: () => policy.endOfMessage({} as never),
    };
    const { server } = serveMilter(failing, (error) => errors.push(error));
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    try {
      const postfix = await postfixTalking(socketPath);
      assert.equal(
        await postfix.ask(packet('M', z('<alice@alice.example>'))),
        '451 4.3.0 Sender policy unavailable, try again later',
      );
      assert.match(String(errors[0]), /senders table unreadable/);
      const garbage = await postfixTalking(socketPath);
      garbage.send(Buffer.from('EHLO attacker\r\n'));
      await new Promise((resolve) => garbage.socket.once('close', resolve));
      postfix.socket.destroy();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('the sender policy', () => {
  const submission = (login: string, sender: string, ...froms: string[]) => ({
    macros: new Map([
      ['daemon_name', ORIGINATING],
      ['auth_authen', login],
    ]),
    clientAddress: '127.0.0.1',
    helo: 'client.example',
    sender,
    headers: froms.map((value) => ({ name: 'From', value })),
    size: 0,
  });
  const inbound = (address: string, sender: string, ...froms: string[]) => ({
    macros: new Map([['daemon_name', 'mail.example']]),
    clientAddress: address,
    helo: 'client.example',
    sender,
    headers: [...froms.map((value) => ({ name: 'From', value })), { name: 'Subject', value: 'hi' }],
    size: 0,
  });
  const reply = (verdict: { action: string; reply?: string }) => verdict.reply ?? verdict.action;

  it('on submission refuses a login no longer listed, at MAIL FROM and at the end of the message', async () => {
    const before = submission('bob', 'bob@bob.example', 'bob@bob.example');
    assert.equal(reply(await policy.mailFrom(before)), 'continue');
    // Suspended while the session is open: its logins are out of Dovecot's table.
    logins.delete('bob');
    try {
      const from = async (login: string) =>
        reply(await policy.mailFrom(submission(login, 'bob@bob.example')));
      assert.equal(reply(await policy.endOfMessage(before)), '550 5.7.1 bob may no longer log in');
      assert.equal(await from('bob'), '550 5.7.1 bob may no longer log in');
      // Its other login, still listed, is not touched by this one's going.
      assert.equal(await from('bob@bob.example'), 'continue');
    } finally {
      logins.add('bob');
    }
  });

  it('on submission accepts only the login’s own domains, as envelope and as the one From', async () => {
    assert.equal(reply(await policy.mailFrom(submission('alice', 'alice@alice.example'))), 'continue');
    assert.equal(reply(await policy.mailFrom(submission('ALICE', 'Info@Alice.Example'))), 'continue');
    assert.equal(
      reply(await policy.mailFrom(submission('alice@alice.example', 'other@alice.example'))),
      'continue',
    );
    assert.equal(
      reply(await policy.mailFrom(submission('alice', 'ceo@bob.example'))),
      '553 5.7.1 alice may not send as <ceo@bob.example>',
    );
    assert.equal(
      reply(await policy.mailFrom(submission('alice', ''))),
      '550 5.7.1 A null sender is not accepted from a login',
    );
    assert.equal(
      reply(await policy.mailFrom(submission('', 'alice@alice.example'))),
      '530 5.7.0 Authentication required',
    );
    // A single mailbox entry is that mailbox's alone: the rest of its domain is not.
    assert.equal(reply(await policy.mailFrom(submission('carol-sales', 'sales@carol.example'))), 'continue');
    assert.notEqual(
      reply(await policy.mailFrom(submission('carol-sales', 'boss@carol.example'))),
      'continue',
    );

    const own = submission('alice', 'alice@alice.example', '"ceo@example.net" <alice@alice.example>');
    assert.equal(reply(await policy.endOfMessage(own)), 'continue');
    const mailbox = submission('carol-sales', 'sales@carol.example', 'Sales <sales@carol.example>');
    assert.equal(reply(await policy.endOfMessage(mailbox)), 'continue');
    for (const [froms, expected] of [
      [['ceo@bob.example'], '550 5.7.1 alice may not send as From <ceo@bob.example>'],
      [
        ['Alice <alice@alice.example>, Bob <ceo@bob.example>'],
        '550 5.7.1 The From header must name exactly one plain address',
      ],
      [['alice@alice.example', 'ceo@bob.example'], '550 5.7.1 A message needs exactly one From header (2)'],
      [[], '550 5.7.1 A message needs exactly one From header (0)'],
      [
        ['Alice <alice@alice.example> ceo@bob.example'],
        '550 5.7.1 The From header must name exactly one plain address',
      ],
      [['Bob: ceo@bob.example;'], '550 5.7.1 The From header must name exactly one plain address'],
      // Another account's domain wherever a reader shows it, the address being alice's own.
      [['"ceo@bob.example" <alice@alice.example>'], '550 5.7.1 alice may not name bob.example in From'],
      [
        ['=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <alice@alice.example>'],
        '550 5.7.1 alice may not name bob.example in From',
      ],
      [['<=?utf-8?q?ceo=40bob.example?=@alice.example>'], '550 5.7.1 alice may not name bob.example in From'],
      [['"ceo＠bob.example" <alice@alice.example>'], '550 5.7.1 alice may not name bob.example in From'],
    ] as const)
      assert.equal(
        reply(await policy.endOfMessage(submission('alice', 'alice@alice.example', ...froms))),
        expected,
      );
    // The header's name in any case is still From.
    const shouting = submission('alice', 'alice@alice.example');
    shouting.headers = [{ name: 'FROM', value: 'ceo@bob.example' }];
    assert.notEqual(reply(await policy.endOfMessage(shouting)), 'continue');
  });

  it('on port 25 refuses a hosted domain as envelope or header sender unless SPF passes, and checks no other', async () => {
    spfChecks.length = 0;
    assert.equal(reply(await policy.mailFrom(inbound('127.0.0.2', 'someone@example.net'))), 'continue');
    assert.equal(reply(await policy.mailFrom(inbound('127.0.0.2', ''))), 'continue');
    assert.deepEqual(spfChecks, [], 'no SPF lookup for a domain not hosted here');
    assert.equal(reply(await policy.mailFrom(inbound('127.0.0.1', 'ceo@bob.example'))), 'continue');
    assert.equal(
      reply(await policy.mailFrom(inbound('127.0.0.2', 'CEO@Bob.Example'))),
      '550 5.7.23 sender domain bob.example is hosted here and SPF does not pass for you',
    );
    assert.equal(
      reply(await policy.mailFrom(inbound('192.0.2.9', 'ceo@bob.example'))),
      '451 4.7.24 SPF of bob.example cannot be checked now',
    );
    assert.equal(
      reply(await policy.endOfMessage(inbound('127.0.0.2', 'someone@example.net', 'Boss <ceo@bob.example>'))),
      '550 5.7.23 header From domain bob.example is hosted here and SPF does not pass for you',
    );
    // A From no parser agrees on is read for every domain it names.
    assert.equal(
      reply(
        await policy.endOfMessage(
          inbound('127.0.0.2', 'someone@example.net', 'x <a@example.net> ceo@bob.example'),
        ),
      ),
      '550 5.7.23 header From domain bob.example is hosted here and SPF does not pass for you',
    );
    assert.equal(
      reply(
        await policy.endOfMessage(
          inbound('127.0.0.2', 'someone@example.net', 'Someone <someone@example.net>'),
        ),
      ),
      'continue',
    );
    assert.equal(
      reply(await policy.endOfMessage(inbound('127.0.0.1', 'someone@example.net', 'ceo@bob.example'))),
      'continue',
    );
  });

  it('on port 25 reads a hosted domain however it is spelt, and takes none from the server itself', async () => {
    const header = (from: string) => inbound('127.0.0.2', 'someone@example.net', from);
    for (const from of [
      'ceo @ bob.example',
      '<ceo@ bob.example>',
      'ceo@(comment)bob.example',
      'ceo@bob.example.',
      'ceo@[bob.example]',
      '"ceo@bob.example" <someone@example.net>',
      // As a reader shows them: encoded-words (B and Q), full-width and look-alike forms.
      '=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <someone@example.net>',
      '=?utf-8?q?ceo=40bob=2Eexample?= <someone@example.net>',
      '=?iso-8859-1?Q?ceo=40bob?= =?utf-8?Q?=2Eexample?= <someone@example.net>',
      '"ceo＠bob．example" <someone@example.net>',
      '"ｃｅｏ＠ＢＯＢ。ｅｘａｍｐｌｅ" <someone@example.net>',
      '"ceo@bob\u200b.example" <someone@example.net>',
    ])
      assert.equal(
        reply(await policy.endOfMessage(header(from))),
        '550 5.7.23 header From domain bob.example is hosted here and SPF does not pass for you',
        from,
      );
    assert.equal(
      reply(await policy.mailFrom(inbound('127.0.0.2', 'ceo@bob.example.'))),
      '550 5.7.23 sender domain bob.example is hosted here and SPF does not pass for you',
    );
    // A program of the server itself (an account's PHP) passes SPF for every hosted domain.
    assert.equal(
      reply(await policy.mailFrom(inbound(OWN, 'ceo@bob.example'))),
      '550 5.7.23 sender domain bob.example is hosted here: from this server, send through submission',
    );
    assert.equal(
      reply(await policy.endOfMessage(inbound(OWN, 'someone@example.net', 'ceo@bob.example'))),
      '550 5.7.23 header From domain bob.example is hosted here: from this server, send through submission',
    );
    assert.equal(reply(await policy.mailFrom(inbound(OWN, 'someone@example.net'))), 'continue');
  });

  it('on mail from sendmail refuses a From naming another account’s domain however spelt, and lets by other domains, root’s and the system’s users’', async () => {
    const owners = senderOwners('alice alice, @alice.example\nbob bob, @bob.example\n', 'host.example');
    const local = localSenderPolicy(() => owners);
    const sendmail = (sender: string, ...froms: string[]) => ({
      macros: new Map([['daemon_name', 'mail.example']]),
      clientAddress: '',
      helo: '',
      sender,
      headers: [...froms.map((value) => ({ name: 'From', value })), { name: 'Subject', value: 'hi' }],
      size: 0,
    });
    const refused = "550 5.7.1 Mail of alice may not name bob.example in From: it is another account's";
    assert.equal(reply(await local.mailFrom(sendmail('alice'))), 'continue');
    for (const [sender, ...froms] of [
      ['alice', 'CEO <ceo@bob.example>'],
      ['alice@alice.example', '=?utf-8?q?ceo=40bob.example?= <alice@alice.example>'],
      ['alice@host.example', '"ceo＠bob．example" <visitor@gmail.com>'],
      ['Alice@Alice.Example', 'ceo@BOB.example.'],
      ['alice', 'alice@alice.example', 'ceo@bob.example'],
    ] as const)
      assert.equal(reply(await local.endOfMessage(sendmail(sender, ...froms))), refused, froms.join(' + '));
    // Its own domains, domains hosted elsewhere (a contact form's visitor), no From at all.
    for (const froms of [['Alice <info@alice.example>'], ['Visitor <visitor@gmail.com>'], []])
      assert.equal(reply(await local.endOfMessage(sendmail('alice', ...froms))), 'continue', froms.join());
    assert.equal(reply(await local.endOfMessage(sendmail('bob', 'CEO <ceo@bob.example>'))), 'continue');
    // Root's and the system's own users' mail is no account's.
    for (const sender of ['root', 'root@host.example', 'www-data@host.example', ''])
      assert.equal(reply(await local.endOfMessage(sendmail(sender, 'ceo@bob.example'))), 'continue', sender);
  });

  it('reads Sender and the Resent- pair as it reads From, wherever it checks From, and leaves Reply-To free', async () => {
    const withHeader = <E extends { headers: { name: string; value: string }[] }>(
      envelope: E,
      name: string,
    ) => ({
      ...envelope,
      headers: [...envelope.headers, { name, value: 'CEO <ceo@bob.example>' }],
    });
    for (const name of ['Sender', 'Resent-From', 'Resent-Sender']) {
      assert.equal(
        reply(
          await policy.endOfMessage(
            withHeader(submission('alice', 'alice@alice.example', 'alice@alice.example'), name),
          ),
        ),
        `550 5.7.1 alice may not name bob.example in ${name}`,
      );
      assert.equal(
        reply(
          await policy.endOfMessage(
            withHeader(inbound('127.0.0.2', 'someone@example.net', 'x@example.net'), name),
          ),
        ),
        '550 5.7.23 header From domain bob.example is hosted here and SPF does not pass for you',
      );
    }
    assert.equal(
      reply(
        await policy.endOfMessage(
          withHeader(submission('alice', 'alice@alice.example', 'alice@alice.example'), 'Reply-To'),
        ),
      ),
      'continue',
    );
    const owners = senderOwners('alice alice, @alice.example\nbob bob, @bob.example\n', 'host.example');
    const local = localSenderPolicy(() => owners);
    const sendmail = {
      macros: new Map(),
      clientAddress: '',
      helo: '',
      sender: 'alice',
      headers: [],
      size: 0,
    };
    assert.equal(
      reply(await local.endOfMessage(withHeader(sendmail, 'Sender'))),
      "550 5.7.1 Mail of alice may not name bob.example in Sender: it is another account's",
    );
    assert.equal(reply(await local.endOfMessage(withHeader(sendmail, 'Reply-To'))), 'continue');
  });

  it('reads From headers as mail readers do, and refuses what they might read otherwise', () => {
    for (const [value, expected] of [
      ['me@alice.example', ['me@alice.example']],
      ['Me <me@alice.example>', ['me@alice.example']],
      ['"ceo@bob.example" <me@alice.example>', ['me@alice.example']],
      ['me@alice.example (CEO of bob@bob.example)', ['me@alice.example']],
      ['A <a@x.example>, b@y.example', ['a@x.example', 'b@y.example']],
      ['Me <me@alice.example> ceo@bob.example', null],
      ['<me@alice.example', null],
      ['"unclosed <me@alice.example>', null],
      ['Group: a@b.example;', null],
      ['Me <@route:me@alice.example>', null],
      ['me@[127.0.0.1]', null],
      ['', null],
    ] as const)
      assert.deepEqual(fromAddresses(value), expected, value);
    assert.deepEqual(namedDomains('"x@a.example" (c@d.example) <y @ B.Example.>, z@[e.example]'), [
      'a.example',
      'b.example',
      'e.example',
    ]);
    for (const [value, expected] of [
      ['=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <x@example.net>', ['example.net', 'bob.example']],
      ['=?UTF-8?Q?ceo=40bob=2Eexample?=', ['bob.example']],
      ['=?utf-8*en?q?ceo=40bob.example?=', ['bob.example']],
      ['=?utf-7?q?ceo+AEA-bob.example?=', ['bob.example']],
      ['=?x-unknown?q?ceo=40bob.example?=', ['bob.example']],
      ['=?shift_jis?b?goOChYKPgZeCgoKPgoI=?=.example', ['bob.example']],
      ['"ceo＠bob．example" <x@example.net>', ['example.net', 'bob.example']],
      ['ceo﹫bob\u3002example', ['bob.example']],
      ['ceo@b\u00adob.example', ['b', 'bob.example']],
      ['ceo@bücher.example', ['xn--bcher-kva.example']],
      ['=?utf-8?q?Caf=C3=A9?= <x@example.net>', ['example.net']],
    ] as const)
      assert.deepEqual(namedDomains(value), expected, value);
  });
});
