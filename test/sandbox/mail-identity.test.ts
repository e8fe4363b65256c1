// Mail identity (CONTRACT §10, "Tenants are isolated"): in `berth sandbox`, the account alice, with
// its own login, its shell and PHP, tries to send as bob.example, and a host on the Internet (another
// loopback address) tries to forge bob.example on port 25. Each attempt is refused with a 5xx and
// nothing of it reaches bob's mailbox; alice's own mail is accepted and signed; and alice cannot read
// the tables, records, keys and logs that name the other accounts.
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { verifyDkim } from '../dkim.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  inboxMessage,
  type RunningSandbox,
  sandboxCall,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

describe('mail identity in the sandbox', () => {
  const dataDir = tempDir('berth-mail-identity-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const message = (from: string, subject: string, extra = '') =>
    `From: ${from}\nTo: bob@bob.example\n${extra}Subject: ${subject}\n\nSent by alice.\n`;
  const submit = (from: string, body: string, to = ['bob@bob.example']) =>
    smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: 'alice',
      password: 'Alice-pass-1234',
      from,
      to,
      message: body,
    });
  const inbound = (localAddress: string, from: string, body: string, to = ['alice@alice.example']) =>
    smtpSend(sandbox, { port: sandbox.smtp_port, localAddress, from, to, message: body });
  const fetch = (login: string, uid: number) => inboxMessage(sandbox, login, uid);
  const arrived = (login: string, uid: number) => arrivedMessage(sandbox, login, uid);
  /** A command as alice (`runuser`), inside the sandbox: its exit status and output. */
  const asAlice = (argv: string[]) => running.exec(['/usr/sbin/runuser', '-u', 'alice', '--', ...argv]);

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('refuses on submission a header From of another account, two From headers and the null sender, with 5xx', async () => {
    const forged = await submit('alice@alice.example', message('CEO <ceo@bob.example>', 'forged from'));
    assert.match(
      forged.data ?? '',
      /^550 5\.7\.1 .*may not send as From <ceo@bob\.example>/,
      JSON.stringify(forged),
    );

    const twice = await submit(
      'alice@alice.example',
      message('alice@alice.example', 'two froms', 'From: ceo@bob.example\n'),
    );
    assert.match(
      twice.data ?? '',
      /^550 5\.7\.1 A message needs exactly one From header/,
      JSON.stringify(twice),
    );

    const named = await submit(
      'alice@alice.example',
      message('=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <alice@alice.example>', 'display name'),
    );
    assert.match(
      named.data ?? '',
      /^550 5\.7\.1 alice may not name bob\.example in From/,
      JSON.stringify(named),
    );

    const hidden = await submit(
      'alice@alice.example',
      message('Alice <alice@alice.example> ceo@bob.example', 'hidden'),
    );
    assert.match(hidden.data ?? '', /^550 /, JSON.stringify(hidden));

    const none = await submit('', message('alice@alice.example', 'null sender'));
    assert.match(none.mail ?? '', /^5\d\d /, JSON.stringify(none));

    const envelope = await submit('ceo@bob.example', message('ceo@bob.example', 'envelope'));
    assert.match(envelope.mail ?? envelope.rcpt?.[0] ?? '', /^5\d\d /, JSON.stringify(envelope));
  });

  it('accepts and signs alice’s own mail, and bob receives nothing of the forgeries', async () => {
    const own = await submit('alice@alice.example', message('Alice <alice@alice.example>', 'own mail'));
    assert.match(own.data ?? '', /^250 /, JSON.stringify(own));
    const first = await arrived('bob:Bob-pass-1234', 1);
    assert.match(first, /Subject: own mail/);
    const resolver = new Resolver();
    resolver.setServers([`127.0.0.1:${sandbox.dns_port}`]);
    const txt = (await resolver.resolveTxt('default._domainkey.alice.example')).map((parts) =>
      parts.join(''),
    );
    assert.equal(verifyDkim(first, /p=([A-Za-z0-9+/=]+)/.exec(txt[0]!)![1]!), 'alice.example');
    // The refused messages came before it: had one been taken, it would be message 1 or 2.
    await sleep(1_000);
    assert.equal(fetch('bob:Bob-pass-1234', 2), '', 'only one message reached bob');
  });

  it('refuses on port 25 bob.example as envelope or header sender from a host SPF does not allow', async () => {
    const envelope = await inbound('127.0.0.2', 'ceo@bob.example', message('ceo@bob.example', 'spoof 1'));
    assert.match(
      envelope.mail ?? '',
      /^550 5\.7\.23 sender domain bob\.example is hosted here and SPF does not pass/,
      JSON.stringify(envelope),
    );
    const header = await inbound(
      '127.0.0.2',
      'someone@example.net',
      message('CEO <ceo@bob.example>', 'spoof 2'),
    );
    assert.match(
      header.data ?? '',
      /^550 5\.7\.23 header From domain bob\.example is hosted here and SPF does not pass/,
      JSON.stringify(header),
    );
  });

  it('refuses on port 25 bob.example from the server itself, whose address SPF allows, and however it is spelt', async () => {
    // alice's PHP connecting to port 25 comes from the server's own address, which bob.example's
    // SPF allows (one shared address): SPF cannot tell her from bob.
    const local = await inbound('127.0.0.1', 'ceo@bob.example', message('ceo@bob.example', 'local 1'));
    assert.match(
      local.mail ?? '',
      /^550 5\.7\.23 sender domain bob\.example is hosted here: from this server, send through submission/,
      JSON.stringify(local),
    );
    const localHeader = await inbound(
      '127.0.0.1',
      'someone@example.net',
      message('CEO <ceo@bob.example>', 'local 2'),
    );
    assert.match(
      localHeader.data ?? '',
      /^550 5\.7\.23 header From domain bob\.example/,
      JSON.stringify(localHeader),
    );
    for (const from of [
      'ceo @ bob.example',
      '<ceo@ bob.example>',
      'ceo@(c)bob.example',
      'ceo@bob.example.',
      // What a reader shows as ceo@bob.example: encoded-words, a full-width ＠ (8-bit UTF-8).
      '=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <x@example.net>',
      '=?utf-8?q?ceo=40bob=2Eexample?= <x@example.net>',
      '"ceo＠bob.example" <x@example.net>',
    ]) {
      const spelt = await inbound('127.0.0.2', 'someone@example.net', message(from, 'spelt'));
      assert.match(spelt.data ?? '', /^550 5\.7\.23 header From domain bob\.example/, from);
    }
    const dotted = await inbound('127.0.0.2', 'ceo@bob.example.', message('someone@example.net', 'dotted'));
    assert.match(dotted.mail ?? '', /^550 5\.7\.23 sender domain bob\.example/, JSON.stringify(dotted));
  });

  it('accepts on port 25 any sender of a domain not hosted here', async () => {
    const outside = await inbound(
      '127.0.0.2',
      'someone@example.net',
      message('someone@example.net', 'outside'),
    );
    assert.match(outside.data ?? '', /^250 /, JSON.stringify(outside));
    assert.match(await arrived('alice:Alice-pass-1234', 1), /Subject: outside/);
    await sleep(1_000);
    assert.equal(fetch('alice:Alice-pass-1234', 2), '', 'none of the forgeries reached alice');
  });

  it('lets alice’s PHP mail() give as envelope sender only its own login or domain', async () => {
    /** PHP's mail() as alice (sendmail -t -i, as PHP-FPM runs it): whether it was taken. */
    const phpMail = async (subject: string, extra: string) => {
      const sent = await asAlice([
        '/usr/bin/php',
        '-r',
        'echo mail("bob@bob.example", $argv[1], "Sent by PHP.", "From: alice@alice.example", $argv[2]) ? "sent" : "refused";',
        subject,
        extra,
      ]);
      return sent.stdout.trim().split('\n').at(-1);
    };
    assert.equal(await phpMail('php forged', '-fceo@bob.example'), 'refused');
    assert.equal(await phpMail('php null', '-f<>'), 'refused');
    assert.equal(await phpMail('php plain', ''), 'sent');
    assert.equal(await phpMail('php own', '-falice@alice.example'), 'sent');
    const subjects = [await arrived('bob:Bob-pass-1234', 2), await arrived('bob:Bob-pass-1234', 3)]
      .map((body) => /^Subject: (.*)$/m.exec(body)?.[1]?.trim())
      .sort();
    assert.deepEqual(subjects, ['php own', 'php plain']);
    await sleep(1_000);
    assert.equal(fetch('bob:Bob-pass-1234', 4), '', 'no forged message reached bob');
  });

  it('keeps Dovecot’s sockets from an account: alice cannot deliver into bob’s mailbox by LMTP, and mail to bob still arrives', async () => {
    // Straight into bob's INBOX, past Postfix and every check, as Dovecot's default socket allowed.
    const lmtp = await asAlice([
      '/usr/bin/php',
      '-r',
      `$s = @stream_socket_client("unix:///run/dovecot/lmtp");
       if (!$s) { echo "refused"; exit; }
       foreach (["LHLO x", "MAIL FROM:<ceo@bob.example>", "RCPT TO:<bob@bob.example>", "DATA"] as $c) { fwrite($s, "$c\r\n"); fgets($s); }
       fwrite($s, "From: CEO <ceo@bob.example>\r\nSubject: by lmtp\r\n\r\nPay.\r\n.\r\n");
       echo fgets($s);`,
    ]);
    assert.equal(lmtp.stdout, 'refused', lmtp.stdout + lmtp.stderr);
    // Every other socket of Dovecot's but its DNS resolver (which resolves what any account may).
    const sockets = (await running.exec(['/usr/bin/find', '/run/dovecot', '-type', 's'])).stdout
      .trim()
      .split('\n');
    assert.ok(sockets.includes('/run/dovecot/auth-userdb'), sockets.join(' '));
    const opened = await asAlice([
      '/usr/bin/php',
      '-r',
      'foreach (array_slice($argv, 1) as $s) if (@stream_socket_client("unix://$s")) echo "$s\n";',
      ...sockets,
    ]);
    assert.deepEqual(opened.stdout.trim().split('\n'), ['/run/dovecot/dns-client']);
    const own = await submit('alice@alice.example', message('alice@alice.example', 'after lmtp'));
    assert.match(own.data ?? '', /^250 /, JSON.stringify(own));
    assert.match(await arrived('bob:Bob-pass-1234', 4), /Subject: after lmtp/);
  });

  it('returns alice’s PHP mail() whose From names bob.example, however spelt, and delivers her contact form’s', async () => {
    const phpMail = async (subject: string, from: string) => {
      const sent = await asAlice([
        '/usr/bin/php',
        '-r',
        'echo mail("bob@bob.example", $argv[1], "Sent by PHP.", "From: " . $argv[2], "-falice@alice.example") ? "sent" : "refused";',
        subject,
        from,
      ]);
      return sent.stdout.trim().split('\n').at(-1);
    };
    // postdrop takes them (the sender is alice's); Berth's local milter refuses them after.
    assert.equal(await phpMail('php ceo', 'CEO <ceo@bob.example>'), 'sent');
    assert.equal(
      await phpMail('php encoded', '=?utf-8?b?Y2VvQGJvYi5leGFtcGxl?= <alice@alice.example>'),
      'sent',
    );
    assert.equal(await phpMail('php visitor', 'Visitor <visitor@gmail.com>'), 'sent');
    assert.match(await arrived('bob:Bob-pass-1234', 5), /Subject: php visitor/);
    // Each refusal comes back to alice, once: a bounce is no account's mail, nothing loops.
    const bounces = [await arrived('alice:Alice-pass-1234', 2), await arrived('alice:Alice-pass-1234', 3)];
    for (const bounce of bounces) {
      assert.match(bounce, /^Status: 5\.7\.1$/m, bounce);
      assert.match(bounce, /Mail of alice may not name bob\.example in From/, bounce);
    }
    await sleep(2_000);
    assert.equal(fetch('bob:Bob-pass-1234', 6), '', 'no forged message reached bob');
    assert.equal(fetch('alice:Alice-pass-1234', 4), '', 'one bounce a refusal');
    // Nothing of alice's or bob's waits (the system's own cron mail, Debian's Roundcube clean-up
    // as www-data at :05 and :35, may).
    const queue = await running.exec(['/usr/sbin/postqueue', '-p']);
    assert.doesNotMatch(queue.stdout, /alice|bob|MAILER-DAEMON/, queue.stdout);
  });

  it('keeps the mail tables, records, keys, logs and the milters from an account', async () => {
    const secret = [
      '/etc/postfix/berth/local-senders',
      '/etc/dovecot/berth/mail.sqlite',
      '/etc/dovecot/berth/mail.sqlite-wal',
      '/etc/dovecot/berth/mail.sqlite-shm',
      '/etc/dovecot/berth/sql.conf',
      '/etc/opendkim/berth/keys',
      '/etc/opendkim/berth/signing',
      '/etc/berth/mail/bob.example.json',
      '/etc/berth/dkim/bob.example.private',
      '/var/log/sandbox/postfix.log',
      '/var/log/sandbox/dovecot.log',
      '/var/log/sandbox/opendkim.log',
      '/var/log/sandbox/berth.log',
    ];
    for (const path of secret) {
      const asRoot = await running.exec(['/usr/bin/cat', '--', path]);
      assert.equal(asRoot.code, 0, `${path} is there: ${asRoot.stderr}`);
      const read = await asAlice(['/usr/bin/cat', '--', path]);
      assert.notEqual(read.code, 0, `alice read ${path}`);
      assert.match(read.stderr, /Permission denied/, path);
    }
    const listed = await asAlice(['/usr/bin/ls', '/etc/berth/mail']);
    assert.notEqual(listed.code, 0, `alice listed the mail records: ${listed.stdout}`);
    assert.doesNotMatch(listed.stdout, /bob/);
    // PHP as alice reaches neither milter (OpenDKIM would sign whatever it is handed), nor the
    // tables Berth serves Postfix, which list every tenant.
    for (const socket of ['opendkim/opendkim.sock', 'berth/sender-policy.sock', 'berth/tables.sock']) {
      const php = await asAlice([
        '/usr/bin/php',
        '-r',
        `echo @stream_socket_client("unix:///var/spool/postfix/${socket}") ? "connected" : "refused";`,
      ]);
      assert.equal(php.stdout, 'refused', socket);
      const root = await running.exec([
        '/usr/bin/php',
        '-r',
        `echo @stream_socket_client("unix:///var/spool/postfix/${socket}") ? "connected" : "refused";`,
      ]);
      assert.equal(root.stdout, 'connected', `${socket} serves root`);
    }
  });

  it('reads nobody else’s queue to an account: the envelopes name every tenant’s correspondents', async () => {
    const listed = await asAlice(['/usr/sbin/postqueue', '-p']);
    assert.notEqual(listed.code, 0, listed.stdout);
    assert.match(listed.stderr, /not allowed to view the mail queue/);
    assert.equal((await running.exec(['/usr/sbin/postqueue', '-p'])).code, 0, 'root reads it');
  });

  it('lets a submission session opened before the suspension send nothing after it', async () => {
    const suspended = await smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: 'alice',
      password: 'Alice-pass-1234',
      from: 'alice@alice.example',
      to: ['bob@bob.example'],
      message: message('alice@alice.example', 'after the suspension'),
      whileOpen: async () => {
        const reply = await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'Unpaid' });
        assert.equal(reply.status, 200, reply.info);
      },
    });
    assert.match(suspended.mail ?? '', /^5\d\d /, JSON.stringify(suspended));
    const back = await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' });
    assert.equal(back.status, 200, back.info);
    const again = await submit('alice@alice.example', message('alice@alice.example', 'unsuspended'));
    assert.match(again.data ?? '', /^250 /, JSON.stringify(again));
  });

  it('delivers local mail to an account’s user into its mailbox, under its quota, never into /var/mail', async () => {
    const sent = await asAlice([
      '/usr/bin/php',
      '-r',
      'echo mail("alice@localhost", "to myself", "kept in my mailbox") ? "sent" : "refused";',
    ]);
    assert.equal(sent.stdout, 'sent', sent.stderr);
    for (let i = 0; i < 100; i++) {
      const found = await running.exec(['/usr/bin/grep', '-rl', 'kept in my mailbox', '/home/alice/Maildir']);
      if (found.stdout !== '') break;
      await sleep(200);
    }
    const found = await running.exec(['/usr/bin/grep', '-rl', 'kept in my mailbox', '/home/alice/Maildir']);
    assert.notEqual(found.stdout, '', 'in her Maildir');
    assert.notEqual(
      (await running.exec(['/usr/bin/test', '-e', '/var/mail/alice'])).code,
      0,
      'no /var/mail/alice',
    );
  });
});
