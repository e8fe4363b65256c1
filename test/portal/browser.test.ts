// The portal as an administrator uses it: Debian's Chromium, driven by playwright-core, against
// `berth serve` over HTTPS. Screenshots of each page go to test-artifacts/portal/.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { tempDir } from '../helpers.ts';
import { post, type Served, serve } from '../process.ts';

const ARTIFACTS = new URL('../../test-artifacts/portal/', import.meta.url).pathname;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

// As root in a closed network: no sandbox, and none of Chromium's background connections.
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

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
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
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

  it('suspends an account from the Accounts page, with a reason, as listsuspended then shows', async () => {
    const created = await api(
      'createacct',
      'apiuser=openapi&apiauth=open-password-2&user=alice&domain=alice-portal.example&email=a%40example.com&package=default&quota=100',
    );
    assert.equal(created.status, 200);
    await page.goto(`${base}/accounts`);
    assert.ok(await page.locator('#account-alice meter').isVisible());
    await page.getByLabel('Reason for suspending alice', { exact: true }).fill('Unpaid invoice 77');
    await page.getByRole('button', { name: 'Suspend alice' }).click();
    assert.ok(await page.getByText('Account alice suspended.').isVisible());
    await shot('accounts');
    const listed = await api('listsuspended', 'apiuser=openapi&apiauth=open-password-2');
    const accounts = (listed.json().data as { accounts: Record<string, { reason: string }> }).accounts;
    assert.equal(accounts.alice?.reason, 'Unpaid invoice 77');
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
    assert.ok(await page.getByRole('cell', { name: 'suspendacct' }).first().isVisible());
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
