// The panel's mailing lists (CONTRACT §14, the Email page): a list made with the contract's labels,
// refused beside its fields and at the maillist limit, its members added and removed on the list's
// own page, the list removed; each action through the one pipeline as the holder (audited
// `customer:<user>`, via the panel); and nothing of one account's lists on the next one's pages.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import { mailingListsOf } from '../../src/store/mailing-lists.ts';
import { get, type HolderSession, type Page, type PanelHarness, panelSuite } from './pages.ts';

describe('the panel’s mailing lists', () => {
  const suite = panelSuite({ alice: { maillist: '2' }, bob: { maillist: 'unlimited' } });
  let h: PanelHarness;
  let alice: HolderSession;
  let bob: HolderSession;
  const post = (path: string, fields: Record<string, string>, as = alice) => suite.post(path, fields, as);
  const follow = (redirect: Page, as = alice) => suite.follow(redirect, as);
  const listsOf = async (user: string) => mailingListsOf(h.services.store.db, user);
  before(() => {
    ({ h } = suite);
    ({ alice, bob } = suite.holders);
  });

  it('shows the list form after the forwarders, with the contract’s labels and the limit in use', async () => {
    const page = await get(h, '/email', alice.cookie);
    assert.equal(page.status, 200);
    assert.ok(page.body.indexOf('id="lists-title"') > page.body.indexOf('id="add-forwarder-title"'));
    assert.match(page.body, /<h2 id="lists-title">Mailing lists<\/h2>\s*<p>No mailing lists yet\.<\/p>/);
    assert.match(page.body, /<label for="list-email">List address<\/label>/);
    assert.match(page.body, /<label for="list-owner">Owner<\/label>/);
    assert.match(page.body, /<button type="submit">Create list<\/button>/);
    assert.match(page.body, /Mailing lists: 0 of 2 in use\./);
    assert.match((await get(h, '/email', bob.cookie)).body, /Mailing lists: 0 in use, no limit\./);
  });

  it('creates a list through add_mailing_list as the holder and lists it with its owner', async () => {
    const page = await follow(
      await post('/email/lists', { email: 'News@Alice.example.com', owner: 'Owner@Example.org' }),
    );
    assert.match(page.body, /Mailing list news@alice\.example\.com created\./);
    assert.match(
      page.body,
      /<td data-label="Email address">news@alice\.example\.com<\/td>\s*<td data-label="Owner">owner@example\.org<\/td>\s*<td data-label="Members">0<\/td>/,
    );
    assert.match(page.body, /href="\/email\/list\?email=news%40alice\.example\.com">Members<span/);
    assert.match(page.body, /Mailing lists: 1 of 2 in use\./);
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.deepEqual(
      [entry!.operation, entry!.api_user, entry!.principal, entry!.via, entry!.status],
      ['add_mailing_list', 'customer:alice', 'holder', 'panel', 200],
    );
    assert.deepEqual(
      (await listsOf('alice')).map((l) => [l.email, l.owner]),
      [['news@alice.example.com', 'owner@example.org']],
    );
  });

  it('refuses a list beside its fields, keeps what was typed, and explains the used-up limit beside List address', async () => {
    const bad = await post('/email/lists', { email: 'not an address', owner: 'nobody' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /<title>Error: Email · Berth<\/title>/);
    assert.match(bad.body, /id="list-email-error">List address: /);
    assert.match(bad.body, /id="list-owner-error">Owner: /);
    assert.match(bad.body, /id="list-owner" name="owner"[^>]*value="nobody"/);
    const elsewhere = await post('/email/lists', { email: 'x@elsewhere.example', owner: 'a@example.org' });
    assert.equal(elsewhere.status, 400);
    assert.match(
      elsewhere.body,
      /id="list-email-error">List address: an address is in one of the account&#39;s/,
    );
    const taken = await post('/email/lists', { email: 'news@alice.example.com', owner: 'a@example.org' });
    assert.equal(taken.status, 400);
    assert.match(taken.body, /id="list-email-error">List address: this already exists\./);
    await follow(await post('/email/lists', { email: 'team@alice.example.com', owner: 'a@example.org' }));
    const full = await post('/email/lists', { email: 'third@alice.example.com', owner: 'a@example.org' });
    assert.equal(full.status, 400);
    assert.match(
      full.body,
      /id="list-email-error">Your plan allows 2 mailing lists and all are in use\. Remove one, or ask your hosting provider for more\./,
    );
    assert.match(
      full.body,
      /id="list-email" name="email"[^>]*aria-invalid="true"[^>]*value="third@alice\.example\.com"/,
    );
    assert.equal((await listsOf('alice')).length, 2);
  });

  it('adds and removes members on the list’s own page, and refuses a bad member beside its field', async () => {
    const page = await get(h, '/email/list?email=news%40alice.example.com', alice.cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>Mailing list news@alice\.example\.com<\/h1>/);
    assert.match(page.body, /Its owner: owner@example\.org\./);
    assert.match(page.body, /news\+subscribe@alice\.example\.com/);
    assert.match(page.body, /No members added yet\./);
    assert.match(page.body, /<label for="member-email">Member address<\/label>/);
    assert.match(page.body, /<button type="submit">Add member<\/button>/);
    const added = await follow(
      await post('/email/list/members', { list: 'news@alice.example.com', email: 'Reader@Example.org' }),
    );
    assert.match(added.body, /reader@example\.org is now a member of news@alice\.example\.com\./);
    assert.match(added.body, /<td data-label="Member address">reader@example\.org<\/td>/);
    await follow(
      await post('/email/list/members', { list: 'news@alice.example.com', email: 'two@example.net' }),
    );
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.deepEqual(
      [entry!.operation, entry!.api_user, entry!.via],
      ['add_list_member', 'customer:alice', 'panel'],
    );
    const bad = await post('/email/list/members', {
      list: 'news@alice.example.com',
      email: 'not an address',
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /id="member-email-error">Member address: /);
    assert.match(bad.body, /id="member-email" name="email"[^>]*value="not an address"/);
    const twice = await post('/email/list/members', {
      list: 'news@alice.example.com',
      email: 'reader@example.org',
    });
    assert.equal(twice.status, 400);
    assert.match(twice.body, /id="member-email-error">Member address: this already exists\./);
    assert.match((await get(h, '/email', alice.cookie)).body, /<td data-label="Members">2<\/td>/);

    const removed = await follow(
      await post('/email/list/members/remove', {
        list: 'news@alice.example.com',
        email: 'reader@example.org',
      }),
    );
    assert.match(removed.body, /reader@example\.org is no longer a member of news@alice\.example\.com\./);
    assert.doesNotMatch(removed.body, /<td data-label="Member address">reader@/);
    const gone = await post('/email/list/members/remove', {
      list: 'news@alice.example.com',
      email: 'reader@example.org',
    });
    assert.equal(gone.status, 400);
    assert.match(gone.body, /Member address: this does not exist\./);
    const news = (await listsOf('alice')).find((l) => l.email === 'news@alice.example.com');
    assert.deepEqual(news!.members, ['two@example.net']);
  });

  it('removes a list with its members', async () => {
    const removed = await follow(await post('/email/lists/remove', { email: 'team@alice.example.com' }));
    assert.match(removed.body, /Mailing list team@alice\.example\.com removed, with its members\./);
    assert.doesNotMatch(removed.body, /<td data-label="Email address">team@/);
    assert.match(removed.body, /Mailing lists: 1 of 2 in use\./);
    const again = await post('/email/lists/remove', { email: 'team@alice.example.com' });
    assert.equal(again.status, 400);
    assert.match(again.body, /this does not exist\./);
    assert.deepEqual(
      (await listsOf('alice')).map((l) => l.email),
      ['news@alice.example.com'],
    );
    assert.equal((await get(h, '/email/list?email=team%40alice.example.com', alice.cookie)).status, 404);
  });

  it('gives the account next door nothing of this one’s lists, whatever address it puts in the query or form', async () => {
    const email = await get(h, '/email', bob.cookie);
    assert.doesNotMatch(email.body, /alice\.example\.com/);
    const foreign = await get(h, '/email/list?email=news%40alice.example.com', bob.cookie);
    assert.equal(foreign.status, 404);
    assert.match(foreign.body, /There is no mailing list news@alice\.example\.com\./);
    assert.doesNotMatch(foreign.body, /two@example\.net|owner@example\.org/);
    const join = await post(
      '/email/list/members',
      { list: 'news@alice.example.com', email: 'intruder@example.org' },
      bob,
    );
    assert.equal(join.status, 404);
    const drop = await post(
      '/email/list/members/remove',
      { list: 'news@alice.example.com', email: 'two@example.net' },
      bob,
    );
    assert.equal(drop.status, 404);
    assert.equal((await post('/email/lists/remove', { email: 'news@alice.example.com' }, bob)).status, 400);
    const taken = await post(
      '/email/lists',
      { email: 'news@alice.example.com', owner: 'b@example.org' },
      bob,
    );
    assert.equal(taken.status, 400);
    assert.match(taken.body, /id="list-email-error">List address: /);
    const news = (await listsOf('alice')).find((l) => l.email === 'news@alice.example.com');
    assert.deepEqual(news!.members, ['two@example.net']);
    assert.deepEqual(await listsOf('bob'), []);
  });

  it('refuses a form without the session’s CSRF token', async () => {
    // The session's cookie, with another token.
    const page = await post('/email/list/members', {
      _csrf: 'wrong',
      list: 'news@alice.example.com',
      email: 'x@example.org',
    });
    assert.equal(page.status, 403);
    const news = (await listsOf('alice')).find((l) => l.email === 'news@alice.example.com');
    assert.deepEqual(news!.members, ['two@example.net']);
  });
});
