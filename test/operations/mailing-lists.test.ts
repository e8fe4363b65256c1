// The mailing lists of an account (CONTRACT §14) through the one pipeline, as the administrator
// acting for a holder and as the holder itself, with the record driver: which addresses a list may
// have (one thing only: never also a mailbox or a forwarder), the maillist limit taken atomically
// and shown by account_info, members added and removed, what each answers, and that each change is
// audited and sends its event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { mailingListsOf } from '../../src/store/mailing-lists.ts';
import {
  assertEventsSent,
  callForHolder,
  createAccount,
  refused,
  succeededAudit,
  suiteHarness,
  webhookTaking,
} from '../helpers.ts';

interface List {
  email: string;
  domain: string;
  owner: string;
  members: string[];
  created: string;
}

/** The events the mailing lists send. */
const EVENTS = [
  'mailing_list.added',
  'mailing_list.removed',
  'mailing_list.member_added',
  'mailing_list.member_removed',
];

describe('the mailing lists of an account, as its holder makes them', () => {
  const h = suiteHarness({
    config: {
      webhooks: [webhookTaking(EVENTS)],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', {
        domain: 'alice.example',
        password: 'Alice-Password-1',
        maillist: '2',
        addondomains: '1',
        subdomains: '1',
      });
      await createAccount(h, 'bob', { domain: 'bob.example', maillist: 'unlimited' });
      await callForHolder(h, 'alice', 'add_domain', { domain: 'shop.example', type: 'addon' });
      await callForHolder(h, 'alice', 'add_domain', { domain: 'blog.alice.example', type: 'subdomain' });
    },
  });
  const addList = (user: string, email: string, owner = 'owner@elsewhere.example') =>
    callForHolder(h, user, 'add_mailing_list', { email, owner });

  it('add_mailing_list answers the list made; list_mailing_lists lists it', async () => {
    const made = await addList('alice', 'News@Alice.Example', 'Boss@Elsewhere.Example');
    assert.equal(made.info, 'Mailing list news@alice.example created');
    const { created, ...rest } = made.data as unknown as List;
    assert.deepEqual(rest, {
      email: 'news@alice.example',
      domain: 'alice.example',
      owner: 'boss@elsewhere.example',
      members: [],
    });
    assert.ok(!Number.isNaN(Date.parse(created)));
    await addList('alice', 'team@shop.example');
    const listed = (await callForHolder(h, 'alice', 'list_mailing_lists')).data as unknown as List[];
    assert.deepEqual(
      listed.map((l) => l.email),
      ['news@alice.example', 'team@shop.example'],
    );
  });

  it('the maillist limit stops one more, 400 limit_reached; account_info counts the lists', async () => {
    const answer = await refused(addList('alice', 'third@alice.example'));
    assert.equal(answer.code, 'limit_reached');
    assert.match(answer.info, /maillist limit \(2\)/);
    const info = (await callForHolder(h, 'alice', 'account_info')).data as {
      limits: { maillist: { used: number; limit: string } };
    };
    assert.deepEqual(info.limits.maillist, { used: 2, limit: '2' });
  });

  it('concurrent adds never pass the limit', async () => {
    await createAccount(h, 'carol', { domain: 'carol.example', maillist: '3' });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => addList('carol', `list${i}@carol.example`)),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 3);
    for (const r of results)
      if (r.status === 'rejected') assert.equal((r.reason as ApiError).code, 'limit_reached');
    assert.equal((await mailingListsOf(h.services.store.db, 'carol')).length, 3);
  });

  it('a maillist limit of 0 allows none', async () => {
    await createAccount(h, 'erin', { domain: 'erin.example', maillist: '0' });
    assert.equal((await refused(addList('erin', 'l@erin.example'))).code, 'limit_reached');
  });

  it("a list's address is in a main, addon or parked domain of the account, and is no other object", async () => {
    // Another account's domain, a subdomain, a domain of no one: refused, nothing made.
    for (const email of ['x@alice.example', 'x@blog.alice.example', 'x@elsewhere.example']) {
      const answer = await refused(addList('bob', email));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'email'], email);
    }
    assert.match((await refused(addList('bob', 'bob@bob.example'))).info, /own address/);
    for (const email of ['a+b@bob.example', 'a/b@bob.example', '.a@bob.example'])
      assert.equal((await refused(addList('bob', email))).code, 'invalid_parameter', email);
    assert.equal((await refused(addList('bob', 'l@bob.example', 'not an address'))).param, 'owner');
    // An owner mlmmj could not keep is refused before anything is made, never a failed step.
    const piped = await refused(addList('bob', 'l@bob.example', '|/bin/sh@example.org'));
    assert.deepEqual([piped.code, piped.param], ['invalid_parameter', 'owner']);
    // A mailbox or forwarder at the address: 400 object_exists, and the other way round.
    await callForHolder(h, 'bob', 'add_mailbox', { email: 'box@bob.example', password: 'Box-Secret-77' });
    await callForHolder(h, 'bob', 'add_forwarder', { email: 'fw@bob.example', to: 'a@b.example' });
    for (const email of ['box@bob.example', 'fw@bob.example'])
      assert.equal((await refused(addList('bob', email))).code, 'object_exists', email);
    await addList('bob', 'talk@bob.example');
    const again = await refused(addList('bob', 'talk@bob.example'));
    assert.deepEqual([again.code, again.param], ['object_exists', 'email']);
    const box = await refused(
      callForHolder(h, 'bob', 'add_mailbox', { email: 'talk@bob.example', password: 'Box-Secret-77' }),
    );
    assert.equal(box.code, 'object_exists');
    assert.match(box.info, /mailing list/);
    const fw = await refused(
      callForHolder(h, 'bob', 'add_forwarder', { email: 'talk@bob.example', to: 'a@b.example' }),
    );
    assert.equal(fw.code, 'object_exists');
    assert.deepEqual(
      (await mailingListsOf(h.services.store.db, 'bob')).map((l) => l.email),
      ['talk@bob.example'],
    );
  });

  it('add_list_member and remove_list_member change the members; errors name what is missing', async () => {
    const added = await callForHolder(h, 'alice', 'add_list_member', {
      list: 'news@alice.example',
      email: 'Reader@Example.Net',
    });
    assert.equal(added.info, 'reader@example.net added to news@alice.example');
    await callForHolder(h, 'alice', 'add_list_member', {
      list: 'news@alice.example',
      email: 'a@example.org',
    });
    assert.deepEqual((added.data as unknown as List).members, ['reader@example.net']);
    const [news] = await mailingListsOf(h.services.store.db, 'alice');
    assert.deepEqual(news!.members, ['a@example.org', 'reader@example.net']);
    const twice = await refused(
      callForHolder(h, 'alice', 'add_list_member', {
        list: 'news@alice.example',
        email: 'reader@example.net',
      }),
    );
    assert.deepEqual([twice.code, twice.param], ['object_exists', 'email']);
    const itself = await refused(
      callForHolder(h, 'alice', 'add_list_member', {
        list: 'news@alice.example',
        email: 'news@alice.example',
      }),
    );
    assert.equal(itself.code, 'invalid_parameter');
    const slashed = await refused(
      callForHolder(h, 'alice', 'add_list_member', { list: 'news@alice.example', email: 'a/b@example.net' }),
    );
    assert.deepEqual([slashed.code, slashed.param], ['invalid_parameter', 'email']);
    // Another account's list is not this account's to change: not found, as a list of no one.
    const other = await refused(
      callForHolder(h, 'bob', 'add_list_member', { list: 'news@alice.example', email: 'x@example.net' }),
    );
    assert.deepEqual([other.code, other.param], ['object_not_found', 'list']);
    const removed = await callForHolder(h, 'alice', 'remove_list_member', {
      list: 'news@alice.example',
      email: 'reader@example.net',
    });
    assert.deepEqual((removed.data as unknown as List).members, ['a@example.org']);
    const gone = await refused(
      callForHolder(h, 'alice', 'remove_list_member', {
        list: 'news@alice.example',
        email: 'reader@example.net',
      }),
    );
    assert.deepEqual([gone.code, gone.param], ['object_not_found', 'email']);
  });

  it('a domain with a list is removed once the list has gone; remove_mailing_list removes it', async () => {
    const answer = await refused(callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' }));
    assert.match(answer.info, /team@shop\.example/);
    const removed = await callForHolder(h, 'alice', 'remove_mailing_list', { email: 'team@shop.example' });
    assert.equal(removed.info, 'Mailing list team@shop.example removed');
    const missing = await refused(
      callForHolder(h, 'alice', 'remove_mailing_list', { email: 'team@shop.example' }),
    );
    assert.equal(missing.code, 'object_not_found');
    await callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' });
    // The limit is free again.
    await addList('alice', 'second@alice.example');
  });

  it('removeacct takes the account’s lists with it', async () => {
    assert.equal((await h.call('removeacct', { user: 'bob' })).statusCode, 200);
    assert.deepEqual(await mailingListsOf(h.services.store.db, 'bob'), []);
  });

  it('the holder’s own calls work on its account; each change is audited and sends its event', async () => {
    const made = await h.callAsHolder(
      { user: 'alice', password: 'Alice-Password-1' },
      'list_mailing_lists',
      {},
    );
    assert.equal(made.statusCode, 200, JSON.stringify(made.body));
    assert.equal((made.body as { data: List[] }).data.length, 2);
    const audit = await succeededAudit(h, '%list%');
    assert.ok(audit.some((row) => row.acting_for === 'alice' && row.operation === 'add_mailing_list'));
    await assertEventsSent(h, EVENTS);
  });
});
