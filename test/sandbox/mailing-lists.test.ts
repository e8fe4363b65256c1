// Mailing lists in the sandbox (CONTRACT §14), with real mail and standard clients only: the holder
// makes a list on the customer API with two members; a post reaches both mailboxes; someone
// subscribes by mail with mlmmj's confirmation, gets posts, and unsubscribes the same way; the
// maillist limit stops one more; a suspended account's list keeps taking mail, which waits until
// unsuspension; the neighbour can neither read the list's members nor make a list in the holder's
// domain, nor send through the lists' own smtpd, nor get a forged From through a list; removal
// ends the list, its directory and members with it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  inboxMessage,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxWithAccounts,
  smtpSend,
} from '../process.ts';

const LIST = 'news@alice.example';
const DIR = '/var/spool/berth-lists/alice.example_news';
const BOX_PASSWORD = 'Box-pass-5678';
const M1 = 'm1@alice.example';
const M2 = 'm2@alice.example';
const BOB = 'bob:Bob-pass-1234';

describe('mailing lists in the sandbox', () => {
  const dataDir = tempDir('berth-lists-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const alice = (operation: string, params: Record<string, string>) =>
    sandboxHolderCall(sandbox, { user: 'alice', password: 'Alice-pass-1234' }, operation, params);
  const bob = (operation: string, params: Record<string, string>) =>
    sandboxHolderCall(sandbox, { user: 'bob', password: 'Bob-pass-1234' }, operation, params);
  /** Sends through submission with a login (`address:password`), From the login's own address. */
  const submit = (login: string, from: string, to: string, subject: string, body = 'Hello.') =>
    smtpSend(sandbox, {
      port: sandbox.submission_port,
      login: login.slice(0, login.indexOf(':')),
      password: login.slice(login.indexOf(':') + 1),
      from,
      to: [to],
      message: `From: ${from}\r\nTo: ${to}\r\nSubject: ${subject}\r\n\r\n${body}\r\n`,
    });
  /** The first message in a login's INBOX whose text matches, within a minute, or ''. */
  const messageLike = async (login: string, pattern: RegExp, seconds = 60): Promise<string> => {
    for (let i = 0; i < seconds * 2; i++) {
      for (let uid = 1; uid <= 12; uid++) {
        const body = inboxMessage(sandbox, login, uid);
        if (body === '') break;
        if (pattern.test(body)) return body;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    return '';
  };
  const members = async () =>
    (await running.exec(['/usr/bin/mlmmj-list', '-L', DIR])).stdout.split('\n').filter(Boolean).sort();
  /** Answers mlmmj's request for confirmation (in `request`) by mail, as bob. */
  const confirm = async (request: string) => {
    const address = /^Reply-To: (news\+conf(?:un)?sub-[^\s@]+@alice\.example)/m.exec(request)?.[1];
    assert.ok(address, request);
    const sent = await submit(BOB, 'bob@bob.example', address, 'Re: confirm');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('a list made on the customer API delivers a post to both members’ mailboxes', async () => {
    for (const email of [M1, M2]) {
      const made = await alice('add_mailbox', { email, password: BOX_PASSWORD });
      assert.equal(made.status, 200, made.body.info);
    }
    const list = await alice('add_mailing_list', { email: LIST, owner: 'alice@alice.example' });
    assert.equal(list.status, 200, list.body.info);
    for (const email of [M1, M2])
      assert.equal((await alice('add_list_member', { list: LIST, email })).status, 200);
    assert.deepEqual(await members(), [M1, M2]);
    const sent = await submit(`${M1}:${BOX_PASSWORD}`, M1, LIST, 'first post', 'Hello, list.');
    assert.match(sent.data ?? '', /^250/, JSON.stringify(sent));
    for (const email of [M1, M2]) {
      const got = await messageLike(`${email}:${BOX_PASSWORD}`, /Subject: first post/);
      assert.match(got, /Hello, list\./, email);
      // Sent by the list (its bounce address), the poster's From kept.
      assert.match(got, /^Return-Path: <news\+bounces-[^>]+@alice\.example>/m);
      assert.match(got, /^From: m1@alice\.example/m);
    }
  });

  it('someone subscribes by mail with the confirmation, gets posts, and unsubscribes the same way', async () => {
    const asked = await submit(BOB, 'bob@bob.example', 'news+subscribe@alice.example', 'subscribe');
    assert.match(asked.data ?? '', /^250/, JSON.stringify(asked));
    await confirm(await messageLike(BOB, /Subject: =\?utf-8\?q\?Confirm_subscription/));
    assert.match(
      await messageLike(BOB, /Subject: =\?utf-8\?q\?Welcome_to_news/),
      /news\+help@alice\.example/,
    );
    assert.deepEqual(await members(), ['bob@bob.example', M1, M2]);
    // The holder's members are its own; the one who came by mail is the list's.
    const listed = (await alice('list_mailing_lists', {})).body.data as { members: string[] }[];
    assert.deepEqual(listed[0]!.members, [M1, M2]);
    await submit(`${M1}:${BOX_PASSWORD}`, M1, LIST, 'second post');
    assert.match(await messageLike(BOB, /Subject: second post/), /^From: m1@alice\.example/m);
    await submit(BOB, 'bob@bob.example', 'news+unsubscribe@alice.example', 'unsubscribe');
    await confirm(await messageLike(BOB, /Subject: =\?utf-8\?q\?Confirm_unsubscribe/));
    assert.notEqual(await messageLike(BOB, /Subject: =\?utf-8\?q\?Goodbye_from_news/), '');
    assert.deepEqual(await members(), [M1, M2]);
  });

  it('the maillist limit stops one more', async () => {
    assert.equal((await sandboxCall(sandbox, 'addpkg', { name: 'onelist', maillist: '1' })).status, 200);
    assert.equal(
      (await sandboxCall(sandbox, 'changepackage', { user: 'alice', package: 'onelist' })).status,
      200,
    );
    const more = await alice('add_mailing_list', {
      email: 'more@alice.example',
      owner: 'alice@alice.example',
    });
    assert.equal(more.status, 400);
    assert.equal((more.body.data as { code: string }).code, 'limit_reached');
    const info = (await alice('account_info', {})).body.data as { limits: { maillist: unknown } };
    assert.deepEqual(info.limits.maillist, { used: 1, limit: '1' });
  });

  it('the neighbour cannot read the list’s members, make a list in alice’s domain, or send through the lists’ smtpd', async () => {
    for (const command of [
      'ls /var/spool/berth-lists',
      `ls ${DIR}`,
      `cat ${DIR}/subscribers.d/m`,
      'cat /etc/postfix/berth/lists',
      'ls /etc/berth/lists',
    ]) {
      const peek = await running.asUser('bob', command);
      assert.notEqual(peek.code, 0, command);
      assert.doesNotMatch(peek.stdout, /m1@alice|news/, command);
    }
    // Bob's PHP (every function enabled) fares no better.
    const php = [
      '<?php',
      `echo shell_exec('ls /var/spool/berth-lists ${DIR} 2>&1; cat ${DIR}/subscribers.d/m 2>&1');`,
      `echo @file_get_contents('${DIR}/subscribers.d/m') === false ? "no-read\\n" : "read\\n";`,
      '',
    ].join('\n');
    const put = await running.asUser('bob', `cat > /home/bob/public_html/lists.php <<'PHP'\n${php}PHP\n`);
    assert.equal(put.code, 0, put.stderr);
    const page = curl([
      '--resolve',
      `bob.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://bob.example:${sandbox.https_port}/lists.php`,
    ]);
    assert.equal(page.status, 200, page.body);
    assert.match(page.body, /no-read/);
    assert.doesNotMatch(page.body, /m1@alice|m2@alice/);
    const theirs = await bob('add_mailing_list', { email: 'x@alice.example', owner: 'bob@bob.example' });
    assert.deepEqual([theirs.status, (theirs.body.data as { param: string }).param], [400, 'email']);
    const port = /lists_port = (\d+)/.exec(
      (await running.exec(['/bin/cat', '/var/lib/berth/berth.toml'])).stdout,
    )?.[1];
    assert.ok(port);
    // Any program may connect there; only the lists' own user is taken.
    const forged = await running.asUser(
      'bob',
      `printf 'From: alice@alice.example\\r\\nTo: ${M2}\\r\\nSubject: forged via lists\\r\\n\\r\\nx\\r\\n' | ` +
        `curl -sS smtp://127.0.0.1:${port} --mail-from news+bounces-1@alice.example --mail-rcpt ${M2} -T - 2>&1`,
    );
    assert.match(forged.stdout, /550/, forged.stdout);
  });

  it('a list of the neighbour’s never carries a From of alice’s domain, and its mail is never signed', async () => {
    assert.equal(
      (await bob('add_mailing_list', { email: 'talk@bob.example', owner: 'bob@bob.example' })).status,
      200,
    );
    for (const email of ['bob@bob.example', M2])
      assert.equal((await bob('add_list_member', { list: 'talk@bob.example', email })).status, 200);
    // As PHP's mail() would: sendmail with a From of alice's domain, refused before the list sees it.
    await running.asUser(
      'bob',
      "printf 'From: alice@alice.example\\nTo: talk@bob.example\\nSubject: forged via a list\\n\\nx\\n' | /usr/sbin/sendmail -t -f bob@bob.example",
    );
    await running.asUser(
      'bob',
      "printf 'From: bob@bob.example\\nTo: talk@bob.example\\nSubject: honest via a list\\n\\nx\\n' | /usr/sbin/sendmail -t -f bob@bob.example",
    );
    const honest = await messageLike(`${M2}:${BOX_PASSWORD}`, /Subject: honest via a list/);
    assert.match(honest, /^From: bob@bob\.example/m);
    assert.doesNotMatch(honest, /DKIM-Signature/);
    assert.equal(await messageLike(`${M2}:${BOX_PASSWORD}`, /forged via/, 1), '');
  });

  it('a suspended account’s list takes mail and holds it; unsuspended, the post goes out', async () => {
    // A member (posts from others are dropped) posts while the list's account is suspended.
    assert.equal((await alice('add_list_member', { list: LIST, email: 'bob@bob.example' })).status, 200);
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'unpaid' })).status,
      200,
    );
    const held = await submit(BOB, 'bob@bob.example', LIST, 'while suspended', 'Wait.');
    assert.match(held.data ?? '', /^250/, JSON.stringify(held));
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.match((await running.exec(['/usr/sbin/postqueue', '-p'])).stdout, /news@alice\.example/);
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' })).status, 200);
    await running.exec(['/usr/sbin/postqueue', '-f']);
    assert.notEqual(await messageLike(`${M2}:${BOX_PASSWORD}`, /Subject: while suspended/), '');
  });

  it('removal ends the list: its directory and members are gone, and mail to it is refused', async () => {
    const removed = await alice('remove_mailing_list', { email: LIST });
    assert.equal(removed.status, 200, removed.body.info);
    assert.equal((await running.exec(['/usr/bin/test', '-e', DIR])).code, 1);
    const refused = await smtpSend(sandbox, {
      port: sandbox.smtp_port,
      from: 'friend@example.org',
      to: [LIST],
      message: `From: friend@example.org\r\nTo: ${LIST}\r\nSubject: gone\r\n\r\nx\r\n`,
    });
    assert.doesNotMatch((refused.rcpt ?? []).join(' ') + (refused.data ?? ''), /^250/);
  });
});
