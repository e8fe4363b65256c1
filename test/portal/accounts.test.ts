// The portal's account pages, called in-process: the list's filters, sorting and pages, the
// account page, creating, suspending (with a reason) and removing, every field error at once, and
// the portal's own page for an address it does not have.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAccount, forSuite } from '../helpers.ts';
import { cookieValue, get, portalHarness, postForm, signedIn } from './pages.ts';

/** The user names of a rendered account list, in the order shown. */
const usersOf = (html: string) => [...html.matchAll(/<tr id="account-([a-z0-9]+)">/g)].map((m) => m[1]);

describe('the portal’s account pages', () => {
  let cookie: string;
  let csrf: string;
  const h = forSuite(async () => {
    const h = await portalHarness();
    ({ cookie, csrf } = await signedIn(h));
    // 55 accounts of root, and a reseller with two of its own: more than one page of 50.
    for (let i = 1; i <= 55; i++) await createAccount(h, `user${String(i).padStart(2, '0')}`);
    await createAccount(h, 'resel', { reseller: 'on' });
    for (const user of ['rone', 'rtwo']) {
      const reply = await h.callAs('resel', 'createacct', {
        user,
        domain: `${user}.example.net`,
        email: `${user}@example.org`,
        package: 'default',
      });
      assert.equal(reply.statusCode, 200);
    }
    await h.call('suspendacct', { user: 'user07', reason: 'Unpaid' });
    await h.call('suspendacct', { user: 'rtwo', reason: 'Abuse' });
    return h;
  });

  it('shows 50 accounts a page, with links to the next and previous pages', async () => {
    const first = await get(h, '/accounts', cookie);
    assert.equal(usersOf(first.body).length, 50);
    assert.match(first.body, /58 account\(s\)\. Page 1 of 2\./);
    assert.match(first.body, /href="\/accounts\?page=2" rel="next"/);
    const second = await get(h, '/accounts?page=2', cookie);
    assert.deepEqual(usersOf(second.body), [
      'user48',
      'user49',
      'user50',
      'user51',
      'user52',
      'user53',
      'user54',
      'user55',
    ]);
    assert.match(second.body, /href="\/accounts" rel="prev"/);
    // A page past the end shows the last one; a page that is no number, the first.
    assert.deepEqual(usersOf((await get(h, '/accounts?page=9', cookie)).body), usersOf(second.body));
    assert.equal(usersOf((await get(h, '/accounts?page=x', cookie)).body)[0], 'resel');
  });

  it('sorts by a column, both ways, marking the column', async () => {
    const byDomain = await get(h, '/accounts?sort=domain&dir=desc', cookie);
    assert.equal(usersOf(byDomain.body)[0], 'user55');
    assert.match(byDomain.body, /aria-sort="descending"><a href="\/accounts\?sort=domain">Domain ↓/);
    const byOwner = usersOf((await get(h, '/accounts?sort=owner', cookie)).body);
    assert.deepEqual(byOwner.slice(0, 3), ['rone', 'rtwo', 'resel']);
    // Something it does not know sorts by user name.
    assert.equal(usersOf((await get(h, '/accounts?sort=password', cookie)).body)[0], 'resel');
  });

  it('filters by state, by owner and by text, together', async () => {
    assert.deepEqual(usersOf((await get(h, '/accounts?state=suspended', cookie)).body), ['rtwo', 'user07']);
    assert.deepEqual(usersOf((await get(h, '/accounts?owner=resel', cookie)).body), ['rone', 'rtwo']);
    assert.deepEqual(usersOf((await get(h, '/accounts?owner=resel&state=active', cookie)).body), ['rone']);
    assert.deepEqual(usersOf((await get(h, '/accounts?q=RTWO.example', cookie)).body), ['rtwo']);
    // % and _ are text, not patterns.
    assert.deepEqual(usersOf((await get(h, '/accounts?q=%25', cookie)).body), []);
    assert.deepEqual(usersOf((await get(h, '/accounts?q=user0_', cookie)).body), []);
    const owners = await get(h, '/accounts', cookie);
    assert.match(owners.body, /<option value="resel">resel<\/option>/);
    assert.match(owners.body, /<option value="root">root<\/option>/);
  });

  it('shows an account’s page: record, usage, mail, state and its audit entries', async () => {
    const page = await get(h, '/accounts/user07', cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /<dt>Domain<\/dt><dd>user07\.example\.com<\/dd>/);
    assert.match(page.body, /Suspended<\/span> since \d{4}-\d\d-\d\d \d\d:\d\d UTC by root: Unpaid/);
    assert.match(page.body, /<dt>Mail<\/dt><dd>Handled on this server; DKIM on, SPF on/);
    assert.match(page.body, /<td data-label="Operation">createacct<\/td>/);
    assert.match(page.body, /<td data-label="Operation">suspendacct<\/td>/);
    const missing = await get(h, '/accounts/ghost', cookie);
    assert.equal(missing.status, 404);
    assert.match(missing.body, /No account named ghost exists\./);
  });

  it('asks for a reason and a confirmation before suspending', async () => {
    const ask = await get(h, '/accounts/user01/suspend', cookie);
    assert.match(ask.body, /Suspend user01\? Its site, mail and shell stop/);
    assert.match(ask.body, /<textarea id="reason" name="reason"/);
    const without = await postForm(h, '/accounts/user01/suspend', { _csrf: csrf, reason: '  ' }, cookie);
    assert.equal(without.status, 400);
    assert.match(without.body, /id="reason-error">Give a reason/);
    const summary = await h.call('accountsummary', { user: 'user01' });
    assert.equal((summary.body.data as { acct: { is_suspended: string } }).acct.is_suspended, 'no');
    const done = await postForm(h, '/accounts/user01/suspend', { _csrf: csrf, reason: 'Chargeback' }, cookie);
    assert.equal(done.status, 303);
    assert.equal(done.headers.location, '/accounts/user01');
    const suspended = await get(
      h,
      '/accounts/user01',
      `${cookie}; ${cookieValue(done.headers, 'berth_notice')}`,
    );
    assert.match(suspended.body, /<p class="notice" role="status">Account user01 suspended\.<\/p>/);
    const listed = await h.call('listsuspended');
    assert.equal(
      (listed.body.data as { accounts: Record<string, { reason: string }> }).accounts.user01?.reason,
      'Chargeback',
    );
    const back = await postForm(h, '/accounts/user01/unsuspend', { _csrf: csrf }, cookie);
    assert.equal(back.status, 303);
  });

  it('creates an account, showing every field error at once and keeping the values but the password', async () => {
    const form = await get(h, '/new-account', cookie);
    assert.match(form.body, /<option value="default" selected>default<\/option>/);
    const bad = await postForm(
      h,
      '/new-account',
      {
        _csrf: csrf,
        user: 'Bad User',
        domain: 'nodot',
        email: 'not-an-address',
        package: 'default',
        password: 'short',
      },
      cookie,
    );
    assert.equal(bad.status, 400);
    // Every field's error at once, in its label's words, pointed to by the field and the summary.
    const labels = { user: 'User name', domain: 'Domain', email: 'Contact e-mail', password: 'Password' };
    for (const [field, label] of Object.entries(labels)) {
      assert.match(bad.body, new RegExp(`id="${field}-error">${label}: `), field);
      assert.match(
        bad.body,
        new RegExp(
          `<input id="${field}" name="${field}" aria-describedby="[^"]*${field}-error" aria-invalid="true"`,
        ),
      );
      assert.match(bad.body, new RegExp(`<li><a href="#${field}">${label}: `), field);
    }
    assert.doesNotMatch(bad.body, /The parameter|email_accounts/);
    assert.match(bad.body, /<title>Error: Create an account · Berth<\/title>/);
    assert.match(bad.body, /<div class="error-summary" role="alert" [^>]*autofocus>/);
    assert.match(bad.body, /<select id="package" name="package">/);
    assert.match(
      bad.body,
      /name="domain" aria-describedby="domain-error" aria-invalid="true" type="text" value="nodot"/,
    );
    assert.doesNotMatch(bad.body, /value="short"/);
    const made = await postForm(
      h,
      '/new-account',
      {
        _csrf: csrf,
        user: 'fresh',
        domain: 'fresh.example',
        email: 'f@example.org',
        package: 'default',
        password: '',
        shell: 'on',
      },
      cookie,
    );
    assert.equal(made.status, 303);
    assert.equal(made.headers.location, '/accounts/fresh');
    const created = await get(
      h,
      '/accounts/fresh',
      `${cookie}; ${cookieValue(made.headers, 'berth_notice')}`,
    );
    assert.match(created.body, /Account fresh created\./);
    const taken = await postForm(
      h,
      '/new-account',
      { _csrf: csrf, user: 'fresh', domain: 'other.example', email: 'f@example.org', package: 'default' },
      cookie,
    );
    assert.match(taken.body, /id="user-error">An account named fresh already exists\./);
  });

  it('removes an account only after its confirmation page', async () => {
    const ask = await get(h, '/accounts/fresh/remove', cookie);
    assert.match(ask.body, /Remove fresh for good\?/);
    assert.match(ask.body, /<button type="submit" class="danger">Remove fresh<\/button>/);
    const done = await postForm(h, '/accounts/fresh/remove', { _csrf: csrf }, cookie);
    assert.equal(done.status, 303);
    assert.equal(done.headers.location, '/accounts');
    const removed = await get(h, '/accounts', `${cookie}; ${cookieValue(done.headers, 'berth_notice')}`);
    assert.match(removed.body, /Account fresh removed\./);
    assert.equal((await h.call('accountsummary', { user: 'fresh' })).statusCode, 400);
    const again = await postForm(h, '/accounts/fresh/remove', { _csrf: csrf }, cookie);
    assert.equal(again.status, 400);
    assert.match(again.body, /No account named fresh exists\./);
  });

  it('answers an unknown portal address with a portal page, and an unknown API path with JSON', async () => {
    const page = await get(h, '/no/such/page', cookie);
    assert.equal(page.status, 404);
    assert.match(String(page.headers['content-type']), /text\/html/);
    assert.match(page.body, /The portal has no page at \/no\/such\/page\./);
    assert.match(page.body, /<nav aria-label="Main">/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'/);
    const anonymous = await get(h, '/no/such/page');
    assert.equal(anonymous.status, 404);
    assert.doesNotMatch(anonymous.body, /<nav aria-label="Main">/);
    const api = await get(h, '/api/v1/nosuch/');
    assert.equal(JSON.parse(api.body).data.code, 'unknown_operation');
  });
});
