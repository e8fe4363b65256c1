// list_domains, add_domain and remove_domain (CONTRACT §14) through the one pipeline, as the
// administrator acting for a holder, with the record driver: the rules of names that span accounts,
// subdomains and document roots, the limits taken atomically, and what each answers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { domainsOf } from '../../src/store/domains.ts';
import {
  callAsOwnHolder,
  callCreateacct,
  callForHolder,
  createAccount,
  holderAuditRow,
  refusal,
  refused,
  suiteHarness,
  webhookTaking,
} from '../helpers.ts';

describe('the domains of an account, as its holder adds and removes them', () => {
  const h = suiteHarness({
    // A webhook that takes the domains' events, so that they are kept (it is never reached).
    config: {
      webhooks: [webhookTaking(['domain.added', 'domain.removed'])],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', {
        domain: 'alice.example',
        addondomains: '2',
        parkeddomains: '1',
        subdomains: '0',
      });
      await createAccount(h, 'bob', { domain: 'bob.example' });
    },
  });
  const add = (user: string, params: Record<string, string>) => callForHolder(h, user, 'add_domain', params);

  it('add_domain answers each kind of domain as made, and list_domains lists them, the main one first', async () => {
    const addon = await add('alice', { domain: 'shop.example', type: 'addon' });
    assert.equal(addon.info, 'Domain shop.example added');
    const { created, ...made } = addon.data as Record<string, string>;
    assert.deepEqual(made, { domain: 'shop.example', type: 'addon', docroot: 'public_html/shop.example' });
    assert.ok(!Number.isNaN(Date.parse(created!)));
    const parked = await add('alice', { domain: 'alice.example.net', type: 'parked' });
    assert.equal((parked.data as { docroot: unknown }).docroot, 'public_html');
    const listed = (await callForHolder(h, 'alice', 'list_domains')).data as {
      domain: string;
      type: string;
    }[];
    assert.deepEqual(
      listed.map((d) => [d.domain, d.type]),
      [
        ['alice.example', 'main'],
        ['alice.example.net', 'parked'],
        ['shop.example', 'addon'],
      ],
    );
  });

  it('a limit of 0 allows none: 400 limit_reached naming the limit and its value', async () => {
    const answer = await refused(add('alice', { domain: 'blog.alice.example', type: 'subdomain' }));
    assert.equal(answer.code, 'limit_reached');
    assert.match(answer.info, /subdomains limit \(0\)/);
    assert.equal(
      (await refused(add('alice', { domain: 'alice.example.org', type: 'parked' }))).code,
      'limit_reached',
    );
  });

  it('concurrent adds never pass the limit', async () => {
    await createAccount(h, 'carol', { domain: 'carol.example', addondomains: '3' });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => add('carol', { domain: `carol-${i}.example`, type: 'addon' })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 3);
    for (const r of results)
      if (r.status === 'rejected') assert.equal((r.reason as ApiError).code, 'limit_reached');
    assert.equal((await domainsOf(h.services.store.db, 'carol')).filter((d) => d.kind === 'addon').length, 3);
  });

  it('a limit lowered below what is used keeps what exists and refuses new domains', async () => {
    const { db } = h.services.store;
    await db.updateTable('accounts').set({ addondomains: 1 }).where('user', '=', 'carol').execute();
    assert.equal((await domainsOf(db, 'carol')).filter((d) => d.kind === 'addon').length, 3);
    assert.equal(
      (await refused(add('carol', { domain: 'carol-9.example', type: 'addon' }))).code,
      'limit_reached',
    );
  });

  it("a domain equal to, under or above another account's domain of any kind is 400 domain_in_use", async () => {
    for (const domain of [
      'shop.example',
      'www.shop.example',
      'x.shop.example',
      'alice.example',
      'alice.example.net',
    ]) {
      const answer = await refused(add('bob', { domain, type: 'addon' }));
      assert.deepEqual([answer.code, answer.param], ['domain_in_use', 'domain'], domain);
    }
    // The account's own domains are not a new addon's either: a name under one is a subdomain.
    assert.equal(
      (await refused(add('bob', { domain: 'www.bob.example', type: 'addon' }))).code,
      'invalid_parameter',
    );
    assert.equal(
      (await refused(add('bob', { domain: 'shop.example', type: 'parked' }))).code,
      'domain_in_use',
    );
    // createacct, too, respects the other accounts' addon and parked domains.
    // (example.net, above alice.example.net, lies above the server's host name: createacct alone
    // may take that, and is refused it for the overlap.)
    for (const domain of ['shop.example', 'www.alice.example.net', 'alice.example.net', 'example.net']) {
      const reply = await callCreateacct(h, 'dave', { domain });
      assert.equal((reply.body.data as { code: string }).code, 'domain_in_use', domain);
    }
  });

  it('a subdomain is one label under a main, addon or parked domain of the account', async () => {
    await h.services.store.db
      .updateTable('accounts')
      .set({ subdomains: null })
      .where('user', '=', 'alice')
      .execute();
    const blog = await add('alice', {
      domain: 'blog.alice.example',
      type: 'subdomain',
      docroot: 'sites/blog',
    });
    assert.equal((blog.data as { docroot: string }).docroot, 'sites/blog');
    const shop = await add('alice', { domain: 'news.shop.example', type: 'subdomain' });
    assert.equal((shop.data as { docroot: string }).docroot, 'public_html/news.shop.example');
    for (const domain of [
      'a.b.alice.example',
      'x.blog.alice.example',
      'www.alice.example',
      'mail.shop.example',
    ])
      assert.equal(
        (await refused(add('alice', { domain, type: 'subdomain' }))).code,
        'invalid_parameter',
        domain,
      );
    // Under another account's domain, a name is in use, whatever its kind.
    for (const [user, domain] of [
      ['alice', 'blog.bob.example'],
      ['bob', 'x.alice.example'],
    ] as const)
      for (const type of ['subdomain', 'addon'])
        assert.equal((await refused(add(user, { domain, type }))).code, 'domain_in_use', `${domain} ${type}`);
  });

  it('the docroot is relative to the home: never absolute, never .., never hidden or the mail', async () => {
    for (const docroot of [
      '/etc',
      '../bob',
      'public_html/../../x',
      '.ssh',
      'Maildir/cur',
      'a//b',
      '~/x',
      'etc',
      'dev/x',
      'usr/share',
      'proc/x',
      'logs',
      'tmp/site',
      'mail/x',
    ]) {
      const answer = await refused(add('alice', { domain: 'other.example', type: 'addon', docroot }));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'docroot'], docroot);
    }
    const parked = await refused(add('alice', { domain: 'other.example', type: 'parked', docroot: 'x' }));
    assert.deepEqual([parked.code, parked.param], ['invalid_parameter', 'docroot']);
    assert.equal(
      (await refused(add('alice', { domain: 'other.example', type: 'vhost' }))).code,
      'invalid_parameter',
    );
  });

  it('a domain the account has is 400 object_exists; one it lacks, 400 object_not_found on removal', async () => {
    assert.deepEqual(await refusal(add('alice', { domain: 'shop.example', type: 'addon' })), {
      status: 400,
      code: 'object_exists',
    });
    assert.deepEqual(
      await refusal(callForHolder(h, 'alice', 'remove_domain', { domain: 'nothing.example' })),
      { status: 400, code: 'object_not_found' },
    );
    // Another account's domain is not this one's to remove.
    assert.deepEqual(await refusal(callForHolder(h, 'bob', 'remove_domain', { domain: 'shop.example' })), {
      status: 400,
      code: 'object_not_found',
    });
  });

  it('remove_domain refuses the main domain and a domain with subdomains, and removes the rest', async () => {
    const main = await refused(callForHolder(h, 'alice', 'remove_domain', { domain: 'alice.example' }));
    assert.equal(main.code, 'invalid_parameter');
    assert.match(main.info, /main domain/);
    const parent = await refused(callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' }));
    assert.match(parent.info, /news\.shop\.example/);
    const removed = await callForHolder(h, 'alice', 'remove_domain', { domain: 'news.shop.example' });
    assert.equal(removed.info, 'Domain news.shop.example removed');
    await callForHolder(h, 'alice', 'remove_domain', { domain: 'shop.example' });
    // Free again, for anyone.
    await add('bob', { domain: 'shop.example', type: 'addon' });
    assert.deepEqual(
      (await domainsOf(h.services.store.db, 'alice')).map((d) => d.domain),
      ['alice.example', 'alice.example.net', 'blog.alice.example'],
    );
  });

  it('the holder adds to its own account alone, audited as customer:<user>', async () => {
    const made = await callAsOwnHolder(h, 'bob', 'add_domain', {
      domain: 'bob-own.example',
      type: 'addon',
      user: 'alice',
    });
    assert.equal((made.data as { domain: string }).domain, 'bob-own.example');
    // `user` is no parameter of the holder's: the domain went to bob's own account.
    assert.ok((await domainsOf(h.services.store.db, 'bob')).some((d) => d.domain === 'bob-own.example'));
    const row = await holderAuditRow(h, 'add_domain', 'bob');
    assert.deepEqual([row?.api_user, row?.target, row?.status], ['customer:bob', 'bob', 200]);
  });

  it('each change is audited as the administrator acting for the holder and sends its event', async () => {
    const { db } = h.services.store;
    const audit = await db
      .selectFrom('audit_log')
      .selectAll()
      .where('operation', 'in', ['add_domain', 'remove_domain'])
      .where('status', '=', 200)
      .where('api_user', '!=', 'customer:bob')
      .execute();
    assert.ok(audit.length >= 5);
    for (const row of audit) assert.equal(row.target, row.acting_for);
    const events = await db
      .selectFrom('events')
      .select(['type', 'payload'])
      .where('type', 'like', 'domain.%')
      .execute();
    const removed = events.filter((e) => e.type === 'domain.removed').map((e) => JSON.parse(e.payload));
    assert.ok(removed.some((e) => e.account === 'alice' && e.data.domain === 'shop.example'));
    assert.ok(events.some((e) => e.type === 'domain.added'));
  });
});
