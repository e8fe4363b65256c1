// Mailing lists (CONTRACT §14) on the linux driver, in a throwaway system root, called as the
// administrator acting for the holder: a list gets a directory of mlmmj's, the lists user's alone,
// with its control files and the members the holder added; the lists table sends its addresses
// (and their extensions) to mlmmj, or while the account is suspended to mlmmj-held (waiting); a failing
// step undoes the rest; removal takes the directory, members and all; a new server makes the lists
// of an account that moves there with their members; doctor finds drift.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { inspect } from '../../src/operations/maintenance.ts';
import { LISTS_USER, listsTable } from '../../src/provision/linux/lists/component.ts';
import { membersOf } from '../../src/provision/linux/lists/mlmmj.ts';
import {
  listBase,
  listsPolicy,
  procSocketName,
  socketOwner,
} from '../../src/provision/linux/lists/policy.ts';
import type { Envelope } from '../../src/provision/linux/mail/milter.ts';
import { queueBudget, senderOwners, withQueueBudget } from '../../src/provision/linux/mail/queue-budget.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { mailingListsOf } from '../../src/store/mailing-lists.ts';
import { objectsOf } from '../../src/store/objects.ts';
import { callForHolder, createAccount, forSuite } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

describe('mailing lists on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const call = (op: string, params: Record<string, string>) => callForHolder(h, 'lena', op, params);
  const dir = 'var/spool/berth-lists/lena.example_news';

  it('a list gets a directory of the lists user’s alone, its control files and its members', async () => {
    await createAccount(h, 'lena', { domain: 'lena.example', maillist: '3' });
    await call('add_mailing_list', { email: 'news@lena.example', owner: 'boss@elsewhere.example' });
    await call('add_list_member', { list: 'news@lena.example', email: 'ann@x.example' });
    await call('add_list_member', { list: 'news@lena.example', email: 'bo@y.example' });
    const lists = findSystemUser(h.root, LISTS_USER)!;
    assert.ok(lists.uid > 0, 'a system user of its own, never root');
    for (const path of ['var/spool/berth-lists', dir, `${dir}/subscribers.d`, `${dir}/control`]) {
      const stat = statSync(file(path));
      assert.deepEqual([stat.uid, stat.mode & 0o777], [lists.uid, 0o700], path);
    }
    assert.equal(read(`${dir}/control/listaddress`), 'news@lena.example\n');
    assert.equal(read(`${dir}/control/owner`), 'boss@elsewhere.example\n');
    assert.equal(read(`${dir}/control/relayhost`), '127.0.0.1\n');
    assert.equal(read(`${dir}/control/smtpport`), '10026\n');
    for (const name of ['subonlypost', 'noarchive', 'noget', 'nolistsubsemail'])
      assert.ok(existsSync(file(`${dir}/control/${name}`)), name);
    assert.deepEqual([...membersOf(file(dir))].sort(), ['ann@x.example', 'bo@y.example']);
    assert.equal(read(`${dir}/subscribers.d/a`), 'ann@x.example\n');
    assert.equal(
      read('etc/postfix/berth/lists'),
      '/^news(\\+[^@]*)?@lena\\.example$/ mlmmj:lena.example_news\n',
    );
    assert.equal(statSync(file('etc/berth/lists')).mode & 0o777, 0o700);
    assert.match(
      read('etc/cron.d/mlmmj-berth'),
      /^\*\/5 \* \* \* \* berth-lists \/usr\/bin\/mlmmj-maintd -F -d \/var\/spool\/berth-lists$/m,
    );
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a member who subscribed by mail stays when the holder’s members change', async () => {
    writeFileSync(file(`${dir}/subscribers.d/c`), 'cy@z.example\n');
    await call('remove_list_member', { list: 'news@lena.example', email: 'ann@x.example' });
    assert.deepEqual([...membersOf(file(dir))].sort(), ['bo@y.example', 'cy@z.example']);
    assert.equal(existsSync(file(`${dir}/subscribers.d/a`)), false);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('suspension sends the list’s mail to mlmmj-held (it waits); unsuspension back to mlmmj', async () => {
    await h.call('suspendacct', { user: 'lena', reason: 'unpaid' });
    assert.equal(
      read('etc/postfix/berth/lists'),
      '/^news(\\+[^@]*)?@lena\\.example$/ mlmmj-held:lena.example_news\n',
    );
    assert.ok(existsSync(file(dir)), 'its members are kept');
    assert.deepEqual(await inspect(h.services), []);
    await h.call('unsuspendacct', { user: 'lena' });
    assert.match(read('etc/postfix/berth/lists'), /mlmmj:lena\.example_news$/m);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a failing step undoes the new list’s directory, its table line and its row', async () => {
    h.failAt.step = 'mailing list fail@lena.example in Postfix';
    try {
      const error = await call('add_mailing_list', {
        email: 'fail@lena.example',
        owner: 'o@x.example',
      }).catch((e) => e);
      assert.equal((error as ApiError).code, 'provisioning_failed');
    } finally {
      h.failAt.step = null;
    }
    assert.equal(existsSync(file('var/spool/berth-lists/lena.example_fail')), false);
    assert.doesNotMatch(read('etc/postfix/berth/lists'), /fail/);
    assert.equal(
      (await mailingListsOf(h.services.store.db, 'lena')).some((l) => l.email === 'fail@lena.example'),
      false,
    );
    assert.deepEqual(await inspect(h.services), []);
  });

  it('doctor finds a list whose directory, members or record went astray', async () => {
    rmSync(file(`${dir}/subscribers.d/b`));
    writeFileSync(
      file('etc/berth/lists/stray@lena.example.json'),
      '{"user":"lena","email":"stray@lena.example","suspended":false}\n',
    );
    const found = await inspect(h.services);
    assert.ok(
      found.some((d) => d.includes('members bo@y.example not subscribed')),
      found.join('\n'),
    );
    assert.ok(
      found.some((d) => d.includes('stray@lena.example: mailing list')),
      found.join('\n'),
    );
    rmSync(file('etc/berth/lists/stray@lena.example.json'));
    writeFileSync(file(`${dir}/subscribers.d/b`), 'bo@y.example\n');
    assert.deepEqual(await inspect(h.services), []);
  });

  it('the lists of an account made on a new server (move-account) come with their members', async () => {
    const account = (await findAccount(h.services.store.db, 'lena'))!;
    const objects = await objectsOf(h.services.store.db, 'lena');
    rmSync(file(dir), { recursive: true });
    assert.ok((await inspect(h.services)).some((d) => d.includes('no directory')));
    for (const step of h.services.driver.changeObjects!(account, { ...objects, mailing_lists: [] }, objects))
      await step.run();
    assert.deepEqual([...membersOf(file(dir))], ['bo@y.example']);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('remove_mailing_list takes its table line, its directory and its members', async () => {
    await call('remove_mailing_list', { email: 'news@lena.example' });
    assert.equal(existsSync(file(dir)), false);
    assert.equal(read('etc/postfix/berth/lists'), '');
    assert.deepEqual(await inspect(h.services), []);
  });

  it('removeacct removes every list with the account', async () => {
    await call('add_mailing_list', { email: 'talk@lena.example', owner: 'o@x.example' });
    assert.ok(existsSync(file('var/spool/berth-lists/lena.example_talk')));
    await h.call('removeacct', { user: 'lena' });
    assert.equal(existsSync(file('var/spool/berth-lists/lena.example_talk')), false);
    assert.equal(read('etc/postfix/berth/lists'), '');
    assert.equal(existsSync(file('etc/berth/lists/talk@lena.example.json')), false);
    assert.deepEqual(await inspect(h.services), []);
  });
});

describe('the lists milter', () => {
  const table = [
    '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
    '   0: 0100007F:271A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1',
    '   1: 0100007F:9C40 0100007F:271A 01 00000000:00000000 00:00000000 00000000   998        0 2 1',
    '   2: 0100007F:9C41 0100007F:271A 01 00000000:00000000 00:00000000 00000000  1001        0 3 1',
  ].join('\n');
  const policy = listsPolicy({
    listsUid: 998,
    listsPort: 10010,
    lists: () =>
      new Map([
        ['news@a.example', true],
        ['held@a.example', false],
      ]),
    connections: () => table,
  });
  const envelope = (port: number, sender: string): Envelope => ({
    macros: new Map(),
    clientAddress: '127.0.0.1',
    clientPort: port,
    helo: 'localhost',
    sender,
    headers: [],
    size: 0,
  });

  it('knows the owner of a connection’s client end from /proc/net/tcp', () => {
    assert.equal(procSocketName('127.0.0.1', 10010), '0100007F:271A');
    assert.equal(socketOwner(table, '127.0.0.1', 40000, 10010), 998);
    assert.equal(socketOwner(table, '127.0.0.1', 40001, 10010), 1001);
    assert.equal(socketOwner(table, '127.0.0.1', 40002, 10010), null);
    assert.equal(listBase('News+bounces-12-x=y.example@a.example'), 'news@a.example');
  });

  it('takes a list’s mail from the lists user alone; another user’s connection is refused', async () => {
    assert.equal((await policy.mailFrom(envelope(40000, 'news+bounces-1@a.example'))).action, 'continue');
    const other = await policy.mailFrom(envelope(40001, 'news+bounces-1@a.example'));
    assert.equal(other.action, 'reject');
    assert.equal((await policy.mailFrom(envelope(40002, 'news@a.example'))).action, 'reject');
  });

  it('refuses a sender that is no list’s, and holds a suspended list’s mail for later', async () => {
    assert.equal((await policy.mailFrom(envelope(40000, 'ceo@a.example'))).action, 'reject');
    assert.equal((await policy.mailFrom(envelope(40000, ''))).action, 'reject');
    assert.equal((await policy.mailFrom(envelope(40000, 'held+owner@a.example'))).action, 'tempfail');
  });

  it('counts a list’s mail in a budget of the account’s lists, never the account’s own', async () => {
    const accountLimits = { bytes: null, messages: 5 };
    const budget = queueBudget(accountLimits, Date.now, { bytes: null, messages: 2 });
    const owners = senderOwners('lena lena, @a.example\n', 'host.example', new Set(['news@a.example']));
    // As the mail component serves it: every message counted, refused for now over the budget.
    const budgeted = withQueueBudget(
      policy,
      budget,
      () => owners,
      () => true,
    );
    const post = envelope(40000, 'news+bounces-7-x=nowhere.example@a.example');
    for (let i = 0; i < 2; i++) {
      assert.equal((await budgeted.mailFrom(post)).action, 'continue');
      assert.equal(
        (await budgeted.endOfMessage({ ...post, size: 100, macros: new Map([['i', `Q${i}`]]) })).action,
        'continue',
      );
    }
    assert.deepEqual(budget.usage("lena's mailing lists"), { bytes: 200, messages: 2 });
    assert.deepEqual(budget.usage('lena'), { bytes: 0, messages: 0 });
    const over = await budgeted.mailFrom(post);
    assert.equal(over.action, 'tempfail');
    assert.match(
      over.action === 'tempfail' ? over.reply : '',
      /^452 4\.3\.1 Mail of lena's mailing lists waiting to be sent is at its limit \(2 messages\)/,
    );
    // The account's own mail still has its whole budget.
    assert.equal(budget.allows('lena', 100), true);
    assert.equal(owners('lena@a.example'), 'lena');
    assert.equal(owners('NEWS@A.example'), "lena's mailing lists");
    assert.equal(owners('news+owner@other.example'), null);
  });

  it('writes nothing to the table for an address no list may have', () => {
    assert.equal(listsTable([{ user: 'x', email: 'a/b@x.example', suspended: false }]), '');
  });
});
