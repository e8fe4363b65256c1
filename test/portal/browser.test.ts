// The portal as an administrator uses it: Debian's Chromium, driven by playwright-core, against
// `berth serve` over HTTPS. Screenshots of each page go to test-artifacts/portal/.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { FORM, tempDir } from '../helpers.ts';
import { post, type Served, serve } from '../process.ts';
import { launchChromium } from './audit-page.ts';

const ARTIFACTS = new URL('../../test-artifacts/portal', import.meta.url).pathname;

describe('the portal in a real browser', () => {
  const dataDir = tempDir('berth-portal-');
  let server: Served;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let base: string;

  const api = (op: string, body: string) =>
    post(dataDir, server.adminPort, `/api/v1/${op}/`, { headers: FORM, body });
  const shot = (name: string) => page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await serve(dataDir);
    base = `https://localhost:${server.adminPort}`;
    browser = await launchChromium();
    context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a wrong password, then logs root in with the printed password', async () => {
    await page.goto(`${base}/`);
    assert.match(page.url(), /\/login$/);
    await shot('login');
    await page.getByLabel('Username', { exact: true }).fill('root');
    await page.getByLabel('Password', { exact: true }).fill('not-the-password');
    await page.getByRole('button', { name: 'Log in' }).click();
    assert.ok(await page.getByText('Wrong user name or password.').isVisible());
    await page.getByLabel('Password', { exact: true }).fill(server.portalPassword!);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(/\/accounts$/);
    const session = (await context.cookies()).find((c) => c.name === 'berth_session');
    assert.equal(session?.httpOnly, true);
    assert.equal(session?.secure, true);
    assert.equal(session?.sameSite, 'Strict');
  });

  it('sends security headers and runs no script', async () => {
    const response = await page.goto(`${base}/preferences/api-manager`);
    const csp = response?.headers()['content-security-policy'] ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.equal(await page.locator('script').count(), 0);
  });

  it('creates an open and a restricted API account through the form', async () => {
    await page.goto(`${base}/preferences/api-manager`);
    await page.getByLabel('API user name', { exact: true }).fill('openapi');
    await page.getByLabel('Password', { exact: true }).fill('open-password-1');
    await page.getByLabel('Repeat password', { exact: true }).fill('open-password-1');
    await page.getByLabel('Allow any IP', { exact: true }).check();
    await page.getByRole('button', { name: 'Create API Account' }).click();
    assert.ok(await page.getByText('API user openapi created.').isVisible());

    await page.getByLabel('API user name', { exact: true }).fill('restrictedapi');
    await page.getByLabel('Password', { exact: true }).fill('restricted-password-1');
    await page.getByLabel('Repeat password', { exact: true }).fill('restricted-password-1');
    await page.getByLabel('Allow the following IPs Only', { exact: true }).check();
    await page.getByLabel('Allowed IPs', { exact: true }).fill('203.0.113.5\n198.51.100.0/24');
    await page.getByLabel('Bound reseller', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Create API Account' }).click();
    assert.ok(await page.getByText('API user restrictedapi created.').isVisible());
    assert.ok(await page.getByRole('cell', { name: '203.0.113.5, 198.51.100.0/24' }).isVisible());
    await shot('api-manager');

    const open = await api('test_connection', 'apiuser=openapi&apiauth=open-password-1');
    assert.equal(open.status, 200);
    const restricted = await api('test_connection', 'apiuser=restrictedapi&apiauth=restricted-password-1');
    assert.equal(restricted.status, 403);
    assert.equal(restricted.json().info, 'You do not have permission to perform this action.');
  });

  it('shows errors beside the field and keeps the values, never the passwords', async () => {
    await page.goto(`${base}/preferences/api-manager`);
    await page.getByLabel('API user name', { exact: true }).fill('mismatch');
    await page.getByLabel('Password', { exact: true }).fill('first-password-1');
    await page.getByLabel('Repeat password', { exact: true }).fill('other-password-1');
    await page.getByRole('button', { name: 'Create API Account' }).click();
    assert.equal(await page.locator('#password2-error').textContent(), 'The two passwords do not match.');
    assert.equal(await page.getByLabel('API user name', { exact: true }).inputValue(), 'mismatch');
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '');
    assert.ok(!(await page.content()).includes('first-password-1'));

    await page.getByLabel('API user name', { exact: true }).fill('Bad Name');
    await page.getByLabel('Password', { exact: true }).fill('first-password-1');
    await page.getByLabel('Repeat password', { exact: true }).fill('first-password-1');
    await page.getByRole('button', { name: 'Create API Account' }).click();
    assert.match((await page.locator('#name-error').textContent()) ?? '', /API user name is 1 to 32/);
    await shot('api-manager-errors');
  });

  it('resets a password so that the old one stops working', async () => {
    await page.goto(`${base}/preferences/api-manager`);
    await page.getByRole('link', { name: 'openapi' }).click();
    await shot('api-user');
    await page.getByLabel('Password', { exact: true }).fill('open-password-2');
    await page.getByLabel('Repeat password', { exact: true }).fill('open-password-2');
    await page.getByRole('button', { name: 'Reset password' }).click();
    assert.ok(await page.getByText('The password of openapi was reset').isVisible());
    assert.equal((await api('test_connection', 'apiuser=openapi&apiauth=open-password-1')).status, 403);
    assert.equal((await api('test_connection', 'apiuser=openapi&apiauth=open-password-2')).status, 200);
  });

  it('suspends an account from the Accounts page, asking a reason and confirming', async () => {
    const created = await api(
      'createacct',
      'apiuser=openapi&apiauth=open-password-2&user=alice&domain=alice-portal.example&email=a%40example.com&package=default&quota=100',
    );
    assert.equal(created.status, 200);
    await page.goto(`${base}/accounts`);
    assert.ok(await page.locator('#account-alice meter').isVisible());
    await page.getByRole('link', { name: 'Suspend alice' }).click();
    await page.getByRole('button', { name: 'Suspend alice' }).click();
    assert.equal(
      await page.locator('#reason-error').textContent(),
      'Give a reason: listsuspended and the account page show it.',
    );
    await page.getByLabel('Reason', { exact: true }).fill('Unpaid invoice 77');
    await shot('account-suspend');
    await page.getByRole('button', { name: 'Suspend alice' }).click();
    await page.waitForURL(/\/accounts\/alice$/);
    assert.ok(await page.getByText('Account alice suspended.').isVisible());
    const listed = await api('listsuspended', 'apiuser=openapi&apiauth=open-password-2');
    const accounts = (listed.json().data as { accounts: Record<string, { reason: string }> }).accounts;
    assert.equal(accounts.alice?.reason, 'Unpaid invoice 77');
  });

  it('shows an account’s page with its record, usage, mail and audit entries', async () => {
    await page.goto(`${base}/accounts`);
    await page.getByRole('link', { name: 'alice', exact: true }).click();
    await page.waitForURL(/\/accounts\/alice$/);
    assert.ok(await page.getByRole('heading', { name: 'Account alice' }).isVisible());
    assert.ok(await page.getByText('Unpaid invoice 77').isVisible());
    assert.ok(await page.getByRole('cell', { name: 'suspendacct' }).isVisible());
    assert.match((await page.locator('main').textContent()) ?? '', /\d{4}-\d\d-\d\d \d\d:\d\d UTC/);
    await shot('account');
  });

  it('creates an account from a form that shows every error at once, then removes it after confirming', async () => {
    await page.goto(`${base}/accounts`);
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('User name', { exact: true }).fill('Bad User');
    await page.getByLabel('Domain', { exact: true }).fill('nodot');
    await page.getByLabel('Contact e-mail', { exact: true }).fill('not-an-address');
    await page.getByRole('button', { name: 'Create account' }).click();
    for (const field of ['user', 'domain', 'email'])
      assert.ok(await page.locator(`#${field}-error`).isVisible(), field);
    await shot('account-new-errors');
    await page.getByLabel('User name', { exact: true }).fill('bobby');
    await page.getByLabel('Domain', { exact: true }).fill('bobby-portal.example');
    await page.getByLabel('Contact e-mail', { exact: true }).fill('bobby@example.org');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForURL(/\/accounts\/bobby$/);
    assert.ok(await page.getByText('Account bobby created.').isVisible());
    await page.getByRole('link', { name: 'Remove' }).click();
    assert.ok(await page.getByText('Remove bobby for good?').isVisible());
    await shot('account-remove');
    await page.getByRole('button', { name: 'Remove bobby' }).click();
    await page.waitForURL(/\/accounts$/);
    assert.ok(await page.getByText('Account bobby removed.').isVisible());
    assert.equal(
      (await api('accountsummary', 'apiuser=openapi&apiauth=open-password-2&user=bobby')).status,
      400,
    );
  });

  it('pages, sorts and filters the Accounts list', async () => {
    for (let i = 1; i <= 52; i++) {
      const user = `bulk${String(i).padStart(2, '0')}`;
      const made = await api(
        'createacct',
        `apiuser=openapi&apiauth=open-password-2&user=${user}&domain=${user}.example&email=${user}%40example.org&package=default`,
      );
      assert.equal(made.status, 200);
    }
    await page.goto(`${base}/accounts`);
    assert.ok(await page.getByText('53 account(s). Page 1 of 2.').isVisible());
    await page.getByRole('link', { name: 'Next page' }).click();
    assert.ok(await page.getByText('Page 2 of 2.').isVisible());
    await page.getByRole('link', { name: 'Domain' }).click();
    await page.getByRole('link', { name: 'Domain ↑' }).click();
    assert.equal(await page.locator('tbody tr').first().getAttribute('id'), 'account-bulk52');
    assert.equal(await page.locator('th[aria-sort]').getAttribute('aria-sort'), 'descending');
    await page.getByLabel('State', { exact: true }).selectOption('suspended');
    await page.getByRole('button', { name: 'Show' }).click();
    assert.deepEqual(await page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.id)), [
      'account-alice',
    ]);
    await shot('accounts');
  });

  it('has a page of its own for an address it does not have', async () => {
    const response = await page.goto(`${base}/accounts/ghost`);
    assert.equal(response?.status(), 404);
    assert.ok(await page.getByText('No account named ghost exists.').isVisible());
    const unknown = await page.goto(`${base}/settings/nothing-here`);
    assert.equal(unknown?.status(), 404);
    assert.ok(await page.getByText('The portal has no page at /settings/nothing-here.').isVisible());
    await shot('not-found');
  });

  it('refuses a form whose CSRF token is wrong, and changes nothing', async () => {
    const forged = await context.request.post(`${base}/accounts/alice/unsuspend`, {
      form: { _csrf: 'forged-token' },
      maxRedirects: 0,
    });
    assert.equal(forged.status(), 403);
    const listed = await api('listsuspended', 'apiuser=openapi&apiauth=open-password-2');
    assert.ok('alice' in (listed.json().data as { accounts: object }).accounts);
  });

  it('adds and edits a package, lists the audit log, and fits a phone-sized screen', async () => {
    await page.goto(`${base}/packages`);
    await page.getByLabel('Package name', { exact: true }).fill('Gold');
    await page.locator('#new-quota').fill('5000');
    await page.getByRole('button', { name: 'Add package' }).click();
    assert.ok(await page.getByText('Package Gold added.').isVisible());
    await page.getByRole('link', { name: 'Gold' }).click();
    await page.getByLabel('Disk quota (MB)', { exact: true }).fill('6000');
    await page.getByRole('button', { name: 'Save changes' }).click();
    assert.ok(await page.getByText('Package Gold changed.').isVisible());
    await shot('packages');
    await page.goto(`${base}/audit`);
    assert.ok(await page.getByRole('cell', { name: 'createacct' }).first().isVisible());
    await shot('audit');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/accounts`);
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
    assert.ok(width <= 390, `the page is ${width}px wide on a 390px screen`);
    await shot('accounts-phone');
  });

  it('logs out', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${base}/accounts`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login$/);
    await page.goto(`${base}/accounts`);
    assert.match(page.url(), /\/login$/);
  });
});
