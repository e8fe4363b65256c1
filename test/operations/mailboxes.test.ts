// The mailboxes and forwarders of an account (CONTRACT §14) through the one pipeline, as the
// administrator acting for a holder and as the holder itself, with the record driver: which
// addresses an account may make, the email limit taken atomically, quotas, what each answers, and
// that a mailbox's password is kept as its hash alone and never audited or sent in an event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { mailboxesOf } from '../../src/store/mailboxes.ts';
import {
  assertEventsSent,
  callForHolder,
  createAccount,
  refusal,
  refused,
  succeededAudit,
  suiteHarness,
  webhookTaking,
} from '../helpers.ts';

const SECRET = 'Mailbox-Secret-7';

/** The events the mailboxes and forwarders send. */
const EVENTS = [
  'mailbox.added',
  'mailbox.removed',
  'mailbox.password_changed',
  'mailbox.quota_changed',
  'forwarder.added',
  'forwarder.removed',
];

describe('the mailboxes and forwarders of an account, as its holder makes them', () => {
  const h = suiteHarness({
    config: {
      webhooks: [webhookTaking(EVENTS)],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', {
        domain: 'alice.example',
        password: 'Alice-Password-1',
        email_accounts: '2',
        mailquota: '500',
        addondomains: '1',
        subdomains: '1',
        parkeddomains: '1',
      });
      await createAccount(h, 'bob', {
        domain: 'bob.example',
        email_accounts: 'unlimited',
        mailquota: 'unlimited',
      });
      await callForHolder(h, 'alice', 'add_domain', { domain: 'shop.example', type: 'addon' });
      await callForHolder(h, 'alice', 'add_domain', { domain: 'blog.alice.example', type: 'subdomain' });
    },
  });
  const addMailbox = (user: string, params: Record<string, string>) =>
    callForHolder(h, user, 'add_mailbox', { password: SECRET, ...params });

  it('add_mailbox answers the mailbox made, its quota the account’s mailquota by default', async () => {
    const made = await addMailbox('alice', { email: 'Info@Alice.Example' });
    assert.equal(made.info, 'Mailbox info@alice.example created');
    const { created, ...rest } = made.data as Record<string, string>;
    assert.deepEqual(rest, { email: 'info@alice.example', domain: 'alice.example', quota: '500' });
    assert.ok(!Number.isNaN(Date.parse(created!)));
    const shop = await addMailbox('alice', { email: 'sales@shop.example', quota: '100' });
    assert.equal((shop.data as { quota: string }).quota, '100');
    const listed = (await callForHolder(h, 'alice', 'list_mailboxes')).data as { email: string }[];
    assert.deepEqual(
      listed.map((m) => m.email),
      ['info@alice.example', 'sales@shop.example'],
    );
    // Kept as a SHA-512 crypt hash, never as given.
    const [stored] = await mailboxesOf(h.services.store.db, 'alice');
    assert.match(stored!.passwordHash, /^\$6\$/);
    assert.ok(!JSON.stringify(listed).includes('$6$'));
  });

  it('the email limit stops one more (the account’s own address is not counted), 400 limit_reached', async () => {
    const answer = await refused(addMailbox('alice', { email: 'third@alice.example' }));
    assert.equal(answer.code, 'limit_reached');
    assert.match(answer.info, /email_accounts limit \(2\)/);
    const info = (await callForHolder(h, 'alice', 'account_info')).data as {
      limits: { email: { used: number; limit: string } };
    };
    assert.deepEqual(info.limits.email, { used: 2, limit: '2' });
  });

  it('concurrent adds never pass the limit', async () => {
    await createAccount(h, 'carol', { domain: 'carol.example', email_accounts: '3' });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => addMailbox('carol', { email: `box${i}@carol.example` })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 3);
    for (const r of results)
      if (r.status === 'rejected') assert.equal((r.reason as ApiError).code, 'limit_reached');
    assert.equal((await mailboxesOf(h.services.store.db, 'carol')).length, 3);
  });

  it('an address is in a main, addon or parked domain of the account, and not its own', async () => {
    for (const email of ['x@alice.example', 'x@blog.alice.example', 'x@elsewhere.example']) {
      const answer = await refused(addMailbox('bob', { email }));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'email'], email);
    }
    assert.equal((await addMailbox('bob', { email: 'x@bob.example' })).info, 'Mailbox x@bob.example created');
    const subdomain = await refused(addMailbox('alice', { email: 'x@blog.alice.example' }));
    assert.match(subdomain.info, /main, addon or parked/);
    for (const email of ['bob@bob.example'])
      assert.match((await refused(addMailbox('bob', { email }))).info, /own address/);
    // Names no mail table or directory could take as they are.
    for (const email of [
      'a/b@bob.example',
      '.a@bob.example',
      'a..b@bob.example',
      'a+b@bob.example',
      'a@b@bob.example',
    ])
      assert.equal((await refused(addMailbox('bob', { email }))).code, 'invalid_parameter', email);
    // Bad input changes nothing.
    assert.deepEqual(
      (await mailboxesOf(h.services.store.db, 'bob')).map((m) => m.email),
      ['x@bob.example'],
    );
  });

  it('a quota is at most the account’s mailquota and never 0; change_mailbox_quota changes it', async () => {
    await h.services.store.db
      .updateTable('accounts')
      .set({ email_accounts: null })
      .where('user', '=', 'alice')
      .execute();
    for (const quota of ['501', 'unlimited', '0', '-1', 'lots'])
      assert.equal(
        (await refused(addMailbox('alice', { email: 'q@alice.example', quota }))).param,
        'quota',
        quota,
      );
    const changed = await callForHolder(h, 'alice', 'change_mailbox_quota', {
      email: 'info@alice.example',
      quota: '250',
    });
    assert.equal((changed.data as { quota: string }).quota, '250');
    assert.equal((await mailboxesOf(h.services.store.db, 'alice'))[0]!.quota, 250);
    const bob = await callForHolder(h, 'bob', 'change_mailbox_quota', {
      email: 'x@bob.example',
      quota: 'unlimited',
    });
    assert.equal((bob.data as { quota: string }).quota, 'unlimited');
  });

  it('change_mailbox_password keeps the new password as a new hash', async () => {
    const before = (await mailboxesOf(h.services.store.db, 'alice'))[0]!.passwordHash;
    const changed = await callForHolder(h, 'alice', 'change_mailbox_password', {
      email: 'info@alice.example',
      password: 'Another-Secret-8',
    });
    assert.equal(changed.info, 'Password of info@alice.example changed');
    const after = (await mailboxesOf(h.services.store.db, 'alice'))[0]!.passwordHash;
    assert.notEqual(after, before);
    assert.match(after, /^\$6\$/);
  });

  it('an address the account has is 400 object_exists; one it lacks, 400 object_not_found', async () => {
    assert.deepEqual(await refusal(addMailbox('alice', { email: 'info@alice.example' })), {
      status: 400,
      code: 'object_exists',
    });
    for (const op of ['remove_mailbox', 'change_mailbox_password', 'change_mailbox_quota'])
      assert.deepEqual(
        await refusal(
          callForHolder(h, 'alice', op, { email: 'none@alice.example', password: SECRET, quota: '10' }),
        ),
        { status: 400, code: 'object_not_found' },
        op,
      );
    // Another account's mailbox is not this one's to change.
    assert.deepEqual(
      await refusal(callForHolder(h, 'bob', 'remove_mailbox', { email: 'info@alice.example' })),
      {
        status: 400,
        code: 'object_not_found',
      },
    );
    assert.deepEqual(await refusal(callForHolder(h, 'bob', 'remove_forwarder', { email: 'x@bob.example' })), {
      status: 400,
      code: 'object_not_found',
    });
  });

  it('add_forwarder sends an address on to up to 20 addresses anywhere', async () => {
    const made = await callForHolder(h, 'alice', 'add_forwarder', {
      email: 'team@shop.example',
      to: 'one@elsewhere.example, Two@Other.Example,one@elsewhere.example',
    });
    const { created: _c, ...rest } = made.data as Record<string, unknown>;
    assert.deepEqual(rest, {
      email: 'team@shop.example',
      domain: 'shop.example',
      to: ['one@elsewhere.example', 'Two@other.example'],
    });
    // The address of a mailbox or forwarder is taken either way.
    for (const email of ['team@shop.example', 'info@alice.example'])
      assert.equal(
        (await refused(callForHolder(h, 'alice', 'add_forwarder', { email, to: 'a@b.example' }))).code,
        'object_exists',
      );
    assert.equal((await refused(addMailbox('alice', { email: 'team@shop.example' }))).code, 'object_exists');
    const many = Array.from({ length: 21 }, (_, i) => `r${i}@x.example`).join(',');
    for (const to of [many, '', 'a@x.example,,b@x.example', 'not-an-address', 'loop@alice.example'])
      assert.equal(
        (await refused(callForHolder(h, 'alice', 'add_forwarder', { email: 'loop@alice.example', to })))
          .param,
        'to',
        to,
      );
    for (const email of ['x@blog.alice.example', 'alice@shop.example', 'x@bob.example'])
      assert.equal(
        (await refused(callForHolder(h, 'alice', 'add_forwarder', { email, to: 'a@b.example' }))).param,
        'email',
        email,
      );
    const listed = (await callForHolder(h, 'alice', 'list_forwarders')).data as { email: string }[];
    assert.deepEqual(
      listed.map((f) => f.email),
      ['team@shop.example'],
    );
  });

  it('a domain with mailboxes or forwarders is removed once they have gone', async () => {
    const answer = await refused(callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' }));
    assert.match(answer.info, /sales@shop\.example, team@shop\.example/);
    await callForHolder(h, 'alice', 'remove_mailbox', { email: 'sales@shop.example' });
    const removed = await callForHolder(h, 'alice', 'remove_forwarder', { email: 'team@shop.example' });
    assert.equal(removed.info, 'Forwarder team@shop.example removed');
    await callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' });
  });

  it('no document root is in the mailboxes’ directory', async () => {
    const answer = await refused(
      callForHolder(h, 'alice', 'add_domain', { domain: 'other.example', type: 'addon', docroot: 'mail/x' }),
    );
    assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'docroot']);
  });

  it('an account on remote mail has no mailboxes here', async () => {
    await createAccount(h, 'dave', { domain: 'dave.example', mailserver: 'remote' });
    assert.match((await refused(addMailbox('dave', { email: 'x@dave.example' }))).info, /mailserver=remote/);
  });

  it('removeacct takes the account’s mailboxes and forwarders with it', async () => {
    await callForHolder(h, 'bob', 'add_forwarder', { email: 'f@bob.example', to: 'a@b.example' });
    assert.equal((await h.call('removeacct', { user: 'bob' })).statusCode, 200);
    const { db } = h.services.store;
    assert.deepEqual(
      await db.selectFrom('mailboxes').select('email').where('user', '=', 'bob').execute(),
      [],
    );
    assert.deepEqual(
      await db.selectFrom('forwarders').select('email').where('user', '=', 'bob').execute(),
      [],
    );
  });

  it('the holder’s own calls work on its account; each change is audited and sends its event, never the password', async () => {
    const made = await h.callAsHolder({ user: 'alice', password: 'Alice-Password-1' }, 'add_mailbox', {
      email: 'own@alice.example',
      password: SECRET,
      user: 'carol',
    });
    assert.equal(made.statusCode, 200, JSON.stringify(made.body));
    assert.ok((await mailboxesOf(h.services.store.db, 'alice')).some((m) => m.email === 'own@alice.example'));
    const audit = await succeededAudit(h, '%_mailbox%');
    assert.ok(audit.some((row) => row.api_user === 'customer:alice' && row.target === 'alice'));
    assert.ok(audit.some((row) => row.acting_for === 'alice' && row.target === 'alice'));
    const events = await assertEventsSent(h, EVENTS);
    const everything = JSON.stringify([audit, events]);
    for (const secret of [SECRET, 'Another-Secret-8', '$6$']) assert.ok(!everything.includes(secret), secret);
  });
});
