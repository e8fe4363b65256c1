// Mailboxes and forwarders (CONTRACT §14) on the linux driver, in a throwaway system root, called as
// the administrator acting for the holder: a mailbox gets its Maildir under the home (the
// account's), its own login with its own password's hash, its own quota and the right to send as
// its address alone; a forwarder is a Postfix virtual alias; suspension takes the mailboxes'
// logins away and keeps their mail arriving; a failing step undoes the rest; a link the account
// planted is never followed; removal takes the mail; doctor finds drift.
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { inspect, recoverInterruptedCalls } from '../../src/operations/maintenance.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { mailboxesOf } from '../../src/store/mailboxes.ts';
import { callForHolder, createAccount, forSuite, refused } from '../helpers.ts';
import { changeDovecotRows, dovecotRows, linuxSetup, postfixTable } from './system-root.ts';

const SECRET = 'Mailbox-Secret-7';

describe('mailboxes and forwarders made by the holder on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const postfix = (name: string) => postfixTable(h.root, name);
  const dovecot = (table: 'logins' | 'users') => dovecotRows(h.root, table);
  const call = (op: string, params: Record<string, string>) => callForHolder(h, 'mia', op, params);
  const refusedWith = async (promise: Promise<unknown>) => {
    const { code, param } = await refused(promise);
    return [code, param];
  };

  it('a mailbox gets its Maildir, its login, its quota and the right to send as itself', async () => {
    await createAccount(h, 'mia', { domain: 'mia.example', email_accounts: '5', mailquota: '200' });
    await call('add_domain', { domain: 'mia-shop.example', type: 'addon' });
    await call('add_mailbox', { email: 'info@mia.example', password: SECRET, quota: '100' });
    await call('add_mailbox', { email: 'sales@mia-shop.example', password: SECRET });
    const mia = findSystemUser(h.root, 'mia')!;
    for (const dir of [
      'mail',
      'mail/mia.example',
      'mail/mia.example/info',
      'mail/mia.example/info/Maildir',
    ]) {
      const stat = statSync(file(`home/mia/${dir}`));
      assert.deepEqual([stat.uid, stat.gid, stat.mode & 0o777], [mia.uid, mia.gid, 0o700], dir);
    }
    assert.ok(existsSync(file('home/mia/mail/mia-shop.example/sales/Maildir')));
    assert.match(postfix('mailboxes'), /^info@mia\.example OK$/m);
    assert.match(postfix('mailboxes'), /^sales@mia-shop\.example OK$/m);
    const [info] = (await mailboxesOf(h.services.store.db, 'mia')).filter(
      (m) => m.email === 'info@mia.example',
    );
    assert.ok(dovecot('logins').includes(`info@mia.example\t${info!.passwordHash}\tinfo@mia.example\n`));
    assert.ok(
      dovecot('users').includes(
        `info@mia.example\t${mia.uid}\t${mia.gid}\t/home/mia/mail/mia.example/info\t*:storage=100M\n`,
      ),
    );
    // The account's mailquota by default.
    assert.match(dovecot('users'), /^sales@mia-shop\.example\t.*storage=200M$/m);
    // It sends as its own address (and the account's logins may, too); it is named nowhere else.
    assert.match(postfix('senders'), /^info@mia\.example info@mia\.example, mia, mia@mia\.example/m);
    assert.equal(postfix('senders').match(/info@mia\.example/g)?.length, 2);
    // The password itself is nowhere.
    for (const name of ['logins', 'users'] as const) assert.equal(dovecot(name).includes(SECRET), false);
    assert.equal(read('etc/berth/mail/mia.example.json').includes(SECRET), false);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a password or quota change rewrites its login or its user', async () => {
    await call('change_mailbox_password', { email: 'info@mia.example', password: 'Another-Secret-8' });
    const [info] = (await mailboxesOf(h.services.store.db, 'mia')).filter(
      (m) => m.email === 'info@mia.example',
    );
    assert.ok(dovecot('logins').includes(`info@mia.example\t${info!.passwordHash}\t`));
    await call('change_mailbox_quota', { email: 'info@mia.example', quota: '150' });
    assert.match(dovecot('users'), /^info@mia\.example\t.*storage=150M$/m);
    // A change of the account's own password keeps the mailboxes as they are.
    await h.call('passwd', { user: 'mia', password: 'Account-Password-9' });
    assert.ok(dovecot('logins').includes(`info@mia.example\t${info!.passwordHash}\t`));
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a forwarder is a virtual alias to each of its addresses', async () => {
    await call('add_forwarder', {
      email: 'team@mia-shop.example',
      to: 'a@elsewhere.example, b@other.example',
    });
    assert.match(postfix('aliases'), /^team@mia-shop\.example a@elsewhere\.example, b@other\.example$/m);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('suspension takes the mailboxes’ logins and sending away and keeps their mail arriving', async () => {
    await h.call('suspendacct', { user: 'mia', reason: 'unpaid' });
    assert.doesNotMatch(dovecot('logins'), /info@mia\.example/);
    assert.doesNotMatch(dovecot('logins'), /sales@mia-shop\.example/);
    // Postfix's senders table is left as it is: with no login, nothing is sent as the mailbox.
    assert.match(postfix('senders'), /^info@mia\.example info@mia\.example, mia, mia@mia\.example/m);
    assert.match(postfix('mailboxes'), /^info@mia\.example OK$/m);
    assert.match(postfix('aliases'), /^team@mia-shop\.example /m);
    assert.deepEqual(await inspect(h.services), []);
    await h.call('unsuspendacct', { user: 'mia' });
    assert.match(dovecot('logins'), /^info@mia\.example\t\$6\$/m);
    assert.match(dovecot('logins'), /^sales@mia-shop\.example\t\$6\$/m);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('doctor finds a mailbox whose Maildir or login is missing', async () => {
    const maildir = file('home/mia/mail/mia.example/info/Maildir');
    renameSync(maildir, `${maildir}.away`);
    const sales = dovecot('logins')
      .split('\n')
      .find((row) => row.startsWith('sales@'))!
      .split('\t');
    changeDovecotRows(h.root, "DELETE FROM logins WHERE login = 'sales@mia-shop.example'");
    try {
      const found = await inspect(h.services);
      assert.ok(
        found.some((d) => d.includes('mailbox info@mia.example: no /home/mia/mail/mia.example/info/Maildir')),
      );
      assert.ok(found.some((d) => d.includes('mailbox sales@mia-shop.example: no login')));
    } finally {
      renameSync(`${maildir}.away`, maildir);
      changeDovecotRows(h.root, `INSERT INTO logins VALUES (${sales.map((v) => `'${v}'`).join(', ')})`);
    }
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a failing step undoes the new mailbox’s directory and its row', async () => {
    h.failAt.step = 'mailboxes';
    try {
      const error = await call('add_mailbox', { email: 'fail@mia.example', password: SECRET }).catch(
        (e) => e,
      );
      assert.equal((error as ApiError).code, 'provisioning_failed');
    } finally {
      h.failAt.step = null;
    }
    assert.equal(existsSync(file('home/mia/mail/mia.example/fail')), false);
    assert.doesNotMatch(postfix('mailboxes'), /fail@/);
    assert.equal(
      (await mailboxesOf(h.services.store.db, 'mia')).some((m) => m.email === 'fail@mia.example'),
      false,
    );
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a link the account planted on the way is refused, never followed, and nothing is made', async () => {
    mkdirSync(file('home/mia/mail/mia-shop.example'), { recursive: true });
    symlinkSync('/etc', file('home/mia/mail/mia-shop.example/evil'));
    assert.deepEqual(
      await refusedWith(call('add_mailbox', { email: 'evil@mia-shop.example', password: SECRET })),
      ['invalid_parameter', 'email'],
    );
    assert.equal(existsSync(file('etc/Maildir')), false);
    assert.doesNotMatch(postfix('mailboxes'), /evil@/);
    assert.equal(
      (await mailboxesOf(h.services.store.db, 'mia')).some((m) => m.email === 'evil@mia-shop.example'),
      false,
    );
  });

  it('recovery after a crash repairs the rest when the account planted a link in a mailbox’s way', async () => {
    await call('add_mailbox', { email: 'trap@mia.example', password: SECRET });
    rmSync(file('home/mia/mail/mia.example/trap'), { recursive: true });
    symlinkSync('/etc', file('home/mia/mail/mia.example/trap'));
    changeDovecotRows(h.root, 'DELETE FROM users');
    h.services.journal.begin({
      user: 'mia',
      domain: 'mia.example',
      homedir: '/home/mia',
      operation: 'mailboxes',
      startedAt: new Date().toISOString(),
      domains: [],
    });
    assert.deepEqual(await recoverInterruptedCalls(h.services), [
      'mia: repaired to match the store after an interrupted "mailboxes"',
    ]);
    assert.match(dovecot('users'), /^info@mia\.example\t/m);
    assert.equal(existsSync(file('etc/Maildir')), false);
    assert.ok(
      (await inspect(h.services)).some((d) => d.includes('mailbox trap@mia.example: no /home/mia/mail')),
    );
    await call('remove_mailbox', { email: 'trap@mia.example' });
    // The link goes, never what it points to.
    assert.equal(existsSync(file('home/mia/mail/mia.example/trap')), false);
    assert.ok(existsSync('/etc/passwd'));
    assert.deepEqual(await inspect(h.services), []);
  });

  it('remove_mailbox takes its login and its mail; remove_forwarder its alias', async () => {
    writeFileSync(file('home/mia/mail/mia.example/info/Maildir/message'), 'mail');
    await call('remove_mailbox', { email: 'info@mia.example' });
    assert.equal(existsSync(file('home/mia/mail/mia.example/info')), false);
    assert.doesNotMatch(dovecot('logins'), /info@mia\.example/);
    assert.doesNotMatch(dovecot('users'), /info@mia\.example/);
    assert.doesNotMatch(postfix('mailboxes'), /info@mia\.example/);
    assert.doesNotMatch(postfix('senders'), /^info@/m);
    await call('remove_forwarder', { email: 'team@mia-shop.example' });
    assert.doesNotMatch(postfix('aliases'), /team@/);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('removeacct removes every mailbox with the account and its home', async () => {
    await call('add_forwarder', { email: 'last@mia.example', to: 'a@elsewhere.example' });
    assert.equal((await h.call('removeacct', { user: 'mia' })).statusCode, 200);
    for (const name of ['mailboxes', 'aliases', 'senders'])
      assert.equal(postfix(name).includes('mia'), false, name);
    for (const name of ['logins', 'users'] as const) assert.equal(dovecot(name).includes('mia'), false, name);
    // Nor is it left in the database's file (its deleted rows are overwritten).
    assert.equal(readFileSync(file('etc/dovecot/berth/mail.sqlite')).includes('mia'), false);
    assert.equal(existsSync(file('home/mia')), false);
    assert.deepEqual(await inspect(h.services), []);
  });
});
