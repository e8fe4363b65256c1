// The holder's panel as a holder uses it: Debian's Chromium, driven by playwright-core, against
// `berth serve` over HTTPS. Logging in, single sign-on from a create_user_session URL, each kind of
// domain added, the limit explained beside its field, the account's language and theme, a 375 px
// phone, the keyboard alone, and axe-core on every page and refused form (at 1280, 390 and 320 px
// and in the dark scheme). Screenshots go to test-artifacts/panel/.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { before, describe, it } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { browserPanel } from './browser-harness.ts';

/** A domain of long labels: it must wrap, not widen the page. */
const LONG_DOMAIN = `${'a'.repeat(40)}-${'b'.repeat(20)}.${'c'.repeat(40)}.example`;

describe('the panel in a real browser', () => {
  const panel = browserPanel('berth-panel-', async ({ api }) => {
    const createacct = (user: string, extra = '') => panel.createacct(user, `${user}-panel.example`, extra);
    await createacct('alice', '&addondomains=1&parkeddomains=1&subdomains=1');
    await createacct('bob');
    await api('suspendacct', 'user=bob&reason=Unpaid');
    await createacct('dora', '&language=de&theme=dark');
    await createacct('long', `&addondomains=2`);
    await createacct('dbs', '&sql=1');
  });
  const { api, shot, audit, logIn } = panel;
  let context: BrowserContext;
  let page: Page;
  let base: string;
  const logOut = () => context.clearCookies();
  before(() => {
    ({ context, page, base } = panel);
  });

  it('refuses a wrong password and a suspended account, then logs a holder in with its password', async () => {
    await page.goto(`${base}/`);
    assert.match(page.url(), /\/login$/);
    await audit('login');
    await logIn('alice', 'not-the-password');
    assert.ok(await page.getByText('Wrong user name or password.').first().isVisible());
    await audit('login-refused');
    await logIn('bob');
    assert.ok(await page.getByText('This account is suspended, so it cannot log in.').first().isVisible());
    await logIn('alice');
    assert.equal(page.url(), `${base}/`);
    assert.ok(await page.getByText('Account alice, alice-panel.example').isVisible());
    const session = (await context.cookies()).find((c) => c.name === 'berth_panel_session');
    assert.equal(session?.httpOnly, true);
    assert.equal(session?.secure, true);
    assert.equal(session?.sameSite, 'Strict');
    assert.ok(await page.getByRole('meter', { name: 'Addon domains: 0 of 1' }).isVisible());
    await audit('home');
    await logOut();
  });

  it('logs in from a create_user_session URL, on the page asked for, once', async () => {
    const { data } = await api('create_user_session', 'user=alice&page=domains');
    const url = new URL(String(data.url));
    const sso = `${base}${url.pathname}${url.search}`;
    await page.goto(sso);
    await page.waitForURL(`${base}/domains`);
    assert.ok(await page.getByRole('heading', { name: 'Domains', level: 1 }).isVisible());
    await audit('domains');
    await logOut();
    await page.goto(sso);
    assert.match(page.url(), /\/login\/sso\?token=/);
    assert.ok(
      await page.getByText('This login link has been used already or has expired.').first().isVisible(),
    );
    assert.ok(await page.getByLabel('Username', { exact: true }).isVisible());
  });

  it('logs in from a create_user_session URL opened from billing’s own site, by a link and by a redirect', async () => {
    // Billing's client area on another site (127.0.0.1 is not localhost's site): a link to the
    // URL, and a form whose answer redirects to it, as WHMCS's "Log in to control panel" does.
    const billing = createServer(async (request, response) => {
      const { data } = await api('create_user_session', 'user=alice&page=security');
      const url = new URL(String(data.url));
      const sso = `${base}${url.pathname}${url.search}`;
      if (request.method === 'POST') {
        response.writeHead(303, { location: sso }).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(
        `<!doctype html><title>Billing</title><a href="${sso}">Log in to control panel</a><form method="post"><button>Log in by form</button></form>`,
      );
    });
    await new Promise<void>((resolve) => billing.listen(0, '127.0.0.1', resolve));
    try {
      const home = `http://127.0.0.1:${(billing.address() as AddressInfo).port}/`;
      for (const open of [
        () => page.getByRole('link', { name: 'Log in to control panel' }).click(),
        () => page.getByRole('button', { name: 'Log in by form' }).click(),
      ]) {
        await logOut();
        await page.goto(home);
        await open();
        await page.waitForURL(`${base}/security`);
        assert.ok(await page.getByRole('heading', { name: 'Security', level: 1 }).isVisible());
      }
    } finally {
      billing.close();
    }
    await logOut();
  });

  it('adds an addon domain, a parked domain and a subdomain, then explains the used-up limit beside Type', async () => {
    await logIn('alice');
    await page.goto(`${base}/domains`);
    const add = async (domain: string, type: string) => {
      await page.getByLabel('Domain', { exact: true }).fill(domain);
      await page.getByLabel('Type', { exact: true }).selectOption({ label: type });
      await page.getByRole('button', { name: 'Add domain' }).click();
      await page.waitForLoadState();
    };
    await add('shop-panel.example', 'Addon domain');
    assert.ok(await page.getByText('Domain shop-panel.example added.').isVisible());
    await add('parked-panel.example', 'Parked domain');
    await add('blog.alice-panel.example', 'Subdomain');
    const table = page.getByRole('table', { name: 'Your domains' });
    for (const domain of ['shop-panel.example', 'parked-panel.example', 'blog.alice-panel.example'])
      assert.ok(await table.getByRole('cell', { name: domain, exact: true }).isVisible(), domain);
    await shot('domains-added');
    await add('second-panel.example', 'Addon domain');
    assert.match(await page.title(), /^Error: /);
    const type = page.getByLabel('Type', { exact: true });
    assert.equal(await type.getAttribute('aria-invalid'), 'true');
    const described = await type.getAttribute('aria-describedby');
    assert.match(
      (await page.locator(`#${described}`).textContent()) ?? '',
      /Your plan allows 1 of this type \(Addon domain\) and all are in use/,
    );
    assert.equal(await page.getByLabel('Domain', { exact: true }).inputValue(), 'second-panel.example');
    await audit('domains-limit-reached');
    await page.getByRole('button', { name: /^Remove\s+parked-panel\.example$/ }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByText('Domain parked-panel.example removed.').isVisible());
    await page.goto(`${base}/security`);
    await audit('security');
    await page.getByLabel('Token name', { exact: true }).fill('deploy');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.waitForLoadState();
    assert.ok((await page.getByLabel('The token', { exact: true }).inputValue()).length >= 32);
    await audit('security-token');
    await page.getByLabel('Current password', { exact: true }).fill('wrong-password-1');
    await page.getByLabel('New password', { exact: true }).fill('New-holder-pass-2');
    await page.getByLabel('Repeat new password', { exact: true }).fill('Different-pass-3');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.waitForLoadState();
    assert.match(await page.title(), /^Error: /);
    await audit('security-refused');
    await page.goto(`${base}/no/such/page`);
    await audit('not-found');
    await logOut();
  });

  it('creates a database and a user, grants it, and explains the used-up sql limit beside Database name', async () => {
    await logIn('dbs');
    await page.goto(`${base}/databases`);
    await audit('databases-empty');
    await page.getByLabel('Database name', { exact: true }).fill('wp');
    await page.getByRole('button', { name: 'Create database' }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByText('Database wp created.').isVisible());
    const databases = page.getByRole('table', { name: 'Your databases' });
    assert.ok(await databases.getByRole('cell', { name: 'dbs_wp', exact: true }).isVisible());
    await page.getByLabel('User name', { exact: true }).fill('wp');
    await page.getByLabel('Password', { exact: true }).fill('Db-user-pass-1');
    await page.getByRole('button', { name: 'Add user' }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByText('Database user wp added.').isVisible());
    await page.getByLabel('User', { exact: true }).selectOption('dbs_wp');
    await page.getByLabel('Database', { exact: true }).selectOption('dbs_wp');
    await page.getByRole('button', { name: 'Grant all privileges' }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByText('dbs_wp may now use dbs_wp.').isVisible());
    const users = page.getByRole('table', { name: 'Your database users' });
    assert.ok(await users.getByRole('cell', { name: 'dbs_wp', exact: true }).first().isVisible());
    await audit('databases');
    await page.getByLabel('Database name', { exact: true }).fill('shop');
    await page.getByRole('button', { name: 'Create database' }).click();
    await page.waitForLoadState();
    assert.match(await page.title(), /^Error: /);
    const name = page.getByLabel('Database name', { exact: true });
    assert.equal(await name.getAttribute('aria-invalid'), 'true');
    const described = (await name.getAttribute('aria-describedby'))!.split(' ').at(-1);
    assert.match(
      (await page.locator(`#${described}`).textContent()) ?? '',
      /Your plan allows 1 databases and all are in use/,
    );
    await audit('databases-limit-reached');
    await page
      .getByRole('button', { name: /^Remove\s+dbs_wp$/ })
      .first()
      .click();
    await page.waitForLoadState();
    assert.ok(await page.getByText('Database dbs_wp removed.').isVisible());
    await logOut();
  });

  it('speaks the account’s language and is dark for theme=dark whatever the browser prefers', async () => {
    await logIn('dora');
    assert.equal(await page.getAttribute('html', 'lang'), 'de');
    await page.goto(`${base}/domains`);
    assert.ok(await page.getByRole('button', { name: 'Domain hinzufügen' }).isVisible());
    assert.ok(await page.getByLabel('Art', { exact: true }).isVisible());
    await page.emulateMedia({ colorScheme: 'light' });
    assert.equal(await page.evaluate('getComputedStyle(document.body).backgroundColor'), 'rgb(20, 23, 29)');
    await audit('domains-de-dark');
    await logOut();
  });

  it('fits a 375 px phone, long domains included, and takes the keyboard alone through a page', async () => {
    await logIn('long');
    await page.goto(`${base}/domains`);
    await page.setViewportSize({ width: 375, height: 800 });
    await page.getByLabel('Domain', { exact: true }).fill(LONG_DOMAIN);
    await page.getByLabel('Domain', { exact: true }).press('Enter');
    await page.getByText(`Domain ${LONG_DOMAIN} added.`).waitFor({ timeout: 10_000 });
    await shot('domains-375');
    for (const path of ['/', '/domains', '/email', '/cron', '/backups', '/security']) {
      await page.goto(`${base}${path}`);
      assert.ok(Number(await page.evaluate('document.documentElement.scrollWidth')) <= 375, path);
    }
    const focused = () =>
      page.evaluate(
        `(() => { const e = document.activeElement; return { text: e.textContent.trim(), id: e.id,
           outline: getComputedStyle(e).outlineStyle + ' ' + getComputedStyle(e).outlineWidth }; })()`,
      ) as Promise<{ text: string; id: string; outline: string }>;
    await page.goto(`${base}/domains`);
    await page.keyboard.press('Tab');
    const skip = await focused();
    assert.equal(skip.text, 'Skip to main content');
    assert.equal(skip.outline, 'solid 3px', 'the stylesheet’s own focus mark');
    // The brand, then every page in reading order.
    const expected = [
      'Berth',
      'Home',
      'Domains',
      'Email',
      'Databases',
      'FTP',
      'Cron jobs',
      'Backups',
      'Security',
      'Log out',
    ];
    const order: string[] = [];
    for (const _ of expected) {
      await page.keyboard.press('Tab');
      order.push((await focused()).text);
    }
    assert.deepEqual(order, expected);
    await page.getByLabel('Domain', { exact: true }).focus();
    await page.keyboard.type('other-panel.example');
    await page.keyboard.press('Tab');
    assert.equal((await focused()).id, 'type');
    await page.keyboard.press('Tab');
    assert.equal((await focused()).id, 'docroot');
    await page.keyboard.press('Enter');
    await page.getByText('Domain other-panel.example added.').waitFor({ timeout: 10_000 });
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
