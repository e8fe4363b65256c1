// The panel's Email and Cron jobs pages (CONTRACT §14): mailboxes made with the contract's labels,
// their password and quota changed and removed, forwarders added and removed, a link to webmail;
// cron jobs added, refused beside their fields and at the limit, and removed; each action through
// the one pipeline as the holder (audited `customer:<user>`, via the panel); and nothing of one
// account on the next one's pages.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { before, describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import { cronJobsOf } from '../../src/store/cron-jobs.ts';
import { mailboxesOf } from '../../src/store/mailboxes.ts';
import { get, type HolderSession, type Page, type PanelHarness, panelSuite } from './pages.ts';

describe('the panel’s Email and Cron jobs pages', () => {
  const suite = panelSuite({ alice: { email_accounts: '2' }, bob: {} });
  let h: PanelHarness;
  let alice: HolderSession;
  let bob: HolderSession;
  const post = (path: string, fields: Record<string, string>, as = alice) => suite.post(path, fields, as);
  const follow = (redirect: Page, as = alice) => suite.follow(redirect, as);
  before(() => {
    ({ h } = suite);
    ({ alice, bob } = suite.holders);
  });

  it('shows the mailbox form with the contract’s labels, and a link to webmail where servers run it', async () => {
    // The record driver serves no webmail: no link to one.
    assert.doesNotMatch((await get(h, '/email', alice.cookie)).body, /webmail/i);
    const { config } = h.services;
    config.driver = 'linux';
    const page = await get(h, '/email', alice.cookie).finally(() => {
      config.driver = 'record';
    });
    assert.equal(page.status, 200);
    assert.match(page.body, /<a href="\/email" aria-current="page">Email<\/a>/);
    assert.match(page.body, /<label for="email">Email address<\/label>/);
    assert.match(page.body, /<label for="password">Password<\/label>/);
    assert.match(page.body, /<label for="quota">Quota \(MB\)<\/label>/);
    assert.match(page.body, /<button type="submit">Create mailbox<\/button>/);
    assert.match(page.body, /<label for="forwarder-email">Forward from<\/label>/);
    assert.match(page.body, /<label for="forwarder-to">Forward to<\/label>/);
    assert.ok(
      page.body.includes(`<a href="https://${config.hostName}:2096/" rel="noopener">Open webmail</a>`),
      'webmail on the account’s server, at webmail_port',
    );
    assert.match(page.body, /Mailboxes: 0 of 2 in use\./);
  });

  it('creates a mailbox through add_mailbox as the holder, lists it, and keeps no password in the page', async () => {
    const made = await post('/email/mailboxes', {
      email: 'Info@Alice.example.com',
      password: 'Mailbox-pass-1',
      quota: '100',
    });
    const page = await follow(made);
    assert.match(page.body, /Mailbox info@alice\.example\.com created\./);
    assert.match(
      page.body,
      /<td data-label="Email address">info@alice\.example\.com<\/td>\s*<td data-label="Quota">100 MB<\/td>/,
    );
    assert.doesNotMatch(page.body, /Mailbox-pass-1/);
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.deepEqual(
      [entry!.operation, entry!.api_user, entry!.principal, entry!.via, entry!.status],
      ['add_mailbox', 'customer:alice', 'holder', 'panel', 200],
    );
    // Empty quota: the account's mailquota.
    await follow(
      await post('/email/mailboxes', {
        email: 'sales@alice.example.com',
        password: 'Mailbox-pass-2',
        quota: '',
      }),
    );
    assert.deepEqual((await mailboxesOf(h.services.store.db, 'alice')).map((m) => m.email).sort(), [
      'info@alice.example.com',
      'sales@alice.example.com',
    ]);
  });

  it('refuses a mailbox beside its fields, and explains the used-up limit beside Email address', async () => {
    const bad = await post('/email/mailboxes', { email: 'not an address', password: 'short', quota: 'lots' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /<title>Error: Email · Berth<\/title>/);
    assert.match(bad.body, /id="email-error">Email address: /);
    assert.match(bad.body, /id="password-error">Password: /);
    assert.match(bad.body, /id="quota-error">Quota \(MB\): /);
    assert.match(bad.body, /id="quota" name="quota"[^>]*value="lots"/);
    assert.doesNotMatch(bad.body, /value="short"/);
    const elsewhere = await post('/email/mailboxes', {
      email: 'x@elsewhere.example',
      password: 'Mailbox-pass-9',
    });
    assert.equal(elsewhere.status, 400);
    assert.match(elsewhere.body, /id="email-error">Email address: an address is in one of the account&#39;s/);
    assert.match(elsewhere.body, /id="email" name="email"[^>]*value="x@elsewhere\.example"/);
    const full = await post('/email/mailboxes', {
      email: 'third@alice.example.com',
      password: 'Mailbox-pass-3',
    });
    assert.equal(full.status, 400);
    assert.match(full.body, /id="email-error">Your plan allows 2 mailboxes and all are in use\./);
  });

  it('changes a mailbox’s password and quota on its own page, and removes it', async () => {
    const page = await get(h, '/email/mailbox?email=info%40alice.example.com', alice.cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>Mailbox info@alice\.example\.com<\/h1>/);
    assert.match(page.body, /id="quota" name="quota"[^>]*value="100"/);
    const differ = await post('/email/mailbox/password', {
      email: 'info@alice.example.com',
      password: 'New-mailbox-pass-1',
      password2: 'Other-mailbox-pass-1',
    });
    assert.equal(differ.status, 400);
    assert.match(differ.body, /id="password2-error">The new passwords do not match\./);
    const before = (await mailboxesOf(h.services.store.db, 'alice')).find(
      (m) => m.email === 'info@alice.example.com',
    );
    const changed = await follow(
      await post('/email/mailbox/password', {
        email: 'info@alice.example.com',
        password: 'New-mailbox-pass-1',
        password2: 'New-mailbox-pass-1',
      }),
    );
    assert.match(changed.body, /The password of info@alice\.example\.com has been changed\./);
    const after = (await mailboxesOf(h.services.store.db, 'alice')).find(
      (m) => m.email === 'info@alice.example.com',
    );
    assert.notEqual(after!.passwordHash, before!.passwordHash);
    const quota = await follow(
      await post('/email/mailbox/quota', { email: 'info@alice.example.com', quota: '250' }),
    );
    assert.match(quota.body, /The quota of info@alice\.example\.com is now 250 MB\./);
    const zero = await post('/email/mailbox/quota', { email: 'info@alice.example.com', quota: '0' });
    assert.equal(zero.status, 400);
    assert.match(zero.body, /id="quota-error">Quota \(MB\): /);
    const removed = await follow(await post('/email/mailboxes/remove', { email: 'sales@alice.example.com' }));
    assert.match(removed.body, /Mailbox sales@alice\.example\.com removed, with its mail\./);
    assert.doesNotMatch(removed.body, /<td data-label="Email address">sales@/);
  });

  it('adds and removes a forwarder', async () => {
    const added = await follow(
      await post('/email/forwarders', {
        email: 'team@alice.example.com',
        to: 'a@example.org, b@example.net',
      }),
    );
    assert.match(added.body, /Forwarder team@alice\.example\.com added\./);
    assert.match(added.body, /<td data-label="Forwards to">a@example\.org, b@example\.net<\/td>/);
    const bad = await post('/email/forwarders', { email: 'team2@alice.example.com', to: 'not an address' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /id="forwarder-to-error">Forward to: /);
    const removed = await follow(await post('/email/forwarders/remove', { email: 'team@alice.example.com' }));
    assert.match(removed.body, /Forwarder team@alice\.example\.com removed\./);
    assert.match(removed.body, /No forwarders yet\./);
  });

  it('adds a cron job, refuses a bad one beside its fields, stops at the limit and removes one', async () => {
    const page = await get(h, '/cron', alice.cookie);
    assert.match(page.body, /<label for="schedule">Schedule<\/label>/);
    assert.match(page.body, /<label for="command">Command<\/label>/);
    assert.match(page.body, /<button type="submit">Add cron job<\/button>/);
    const added = await follow(
      await post('/cron', { schedule: '*/15 * * * *', command: 'php public_html/cron.php' }),
    );
    assert.match(added.body, /Cron job added\./);
    assert.match(added.body, /<td data-label="Schedule"><code>\*\/15 \* \* \* \*<\/code><\/td>/);
    assert.match(added.body, /<td data-label="Command"><code>php public_html\/cron\.php<\/code><\/td>/);
    assert.match(added.body, /Cron jobs: 1 of 20 in use\./);
    const bad = await post('/cron', { schedule: '@daily', command: '' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /id="schedule-error">Schedule: /);
    assert.match(bad.body, /id="command-error">Command is required\./);
    h.services.config.cronJobs = 1;
    try {
      const full = await post('/cron', { schedule: '0 3 * * *', command: 'true' });
      assert.equal(full.status, 400);
      assert.match(full.body, /id="schedule-error">Your plan allows 1 cron jobs and all are in use\./);
    } finally {
      h.services.config.cronJobs = 20;
    }
    const [job] = await cronJobsOf(h.services.store.db, 'alice');
    const removed = await follow(await post('/cron/remove', { id: job!.id }));
    assert.match(removed.body, /Cron job removed\./);
    assert.match(removed.body, /No cron jobs yet\./);
  });

  it('gives the account next door nothing of this one: its mailboxes, forwarders or cron jobs', async () => {
    await follow(await post('/cron', { schedule: '0 4 * * *', command: 'alice-only-job' }));
    await follow(await post('/email/forwarders', { email: 'keep@alice.example.com', to: 'a@example.org' }));
    const email = await get(h, '/email', bob.cookie);
    assert.doesNotMatch(email.body, /alice\.example\.com/);
    assert.doesNotMatch((await get(h, '/cron', bob.cookie)).body, /alice-only-job/);
    const foreign = await get(h, '/email/mailbox?email=info%40alice.example.com', bob.cookie);
    assert.equal(foreign.status, 404);
    const remove = await post('/email/mailboxes/remove', { email: 'info@alice.example.com' }, bob);
    assert.equal(remove.status, 400);
    const password = await post(
      '/email/mailbox/password',
      { email: 'info@alice.example.com', password: 'Stolen-pass-123', password2: 'Stolen-pass-123' },
      bob,
    );
    assert.equal(password.status, 404, 'bob has no such mailbox');
    assert.match(password.body, /There is no mailbox info@alice\.example\.com\./);
    const [job] = await cronJobsOf(h.services.store.db, 'alice');
    assert.equal((await post('/cron/remove', { id: job!.id }, bob)).status, 400);
    assert.equal((await cronJobsOf(h.services.store.db, 'alice')).length, 1);
    assert.equal((await mailboxesOf(h.services.store.db, 'alice')).length, 1);
  });

  it('refuses a form without the session’s CSRF token', async () => {
    // The session's cookie, with another token.
    const page = await post('/cron', { _csrf: 'wrong', schedule: '* * * * *', command: 'true' });
    assert.equal(page.status, 403);
  });

  it('has every message in all four languages, and no other', () => {
    const keys = (value: unknown, prefix = ''): string[] =>
      typeof value === 'object' && value !== null
        ? Object.entries(value).flatMap(([name, inner]) => keys(inner, `${prefix}${name}.`))
        : [prefix.slice(0, -1)];
    const of = (language: string) =>
      keys(
        JSON.parse(
          readFileSync(new URL(`../../src/panel/locales/${language}.json`, import.meta.url), 'utf8'),
        ),
      ).sort();
    const english = of('en');
    for (const key of ['email.address', 'mailbox.new', 'cron.schedule', 'home.limits.cron_jobs'])
      assert.ok(english.includes(key), key);
    for (const language of ['de', 'fr', 'es']) assert.deepEqual(of(language), english, language);
  });
});
