// The portal for every user, in Debian's Chromium: axe-core finds nothing on any page or refused
// form at 1280, 390 and 320 px and in the dark scheme; nothing scrolls sideways with long domains
// and addresses; the keyboard reaches the content, the refused form's summary and its fields; and a
// phone keeps sorting. Screenshots of each page and width go to test-artifacts/portal/a11y/.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { FORM, tempDir } from '../helpers.ts';
import { post, type Served, serve } from '../process.ts';
import { auditPage, launchChromium } from './audit-page.ts';

const ARTIFACTS = new URL('../../test-artifacts/portal/a11y', import.meta.url).pathname;
const API = 'apiuser=auditor&apiauth=auditor-password-1';
/** A domain of 63-character labels and an address at a 72-character domain: they must wrap. */
const LONG_DOMAIN = `${'a'.repeat(30)}-${'b'.repeat(32)}.${'c'.repeat(40)}.example`;
const LONG_EMAIL = `someone.with.a.long.name@${'d'.repeat(63)}.example`;

describe('the portal for every user: axe-core, phones, the keyboard', () => {
  const dataDir = tempDir('berth-portal-a11y-');
  let server: Served;
  let browser: Browser;
  let page: Page;
  let base: string;

  const api = async (op: string, body: string) => {
    const reply = await post(dataDir, server.adminPort, `/api/v1/${op}/`, {
      headers: FORM,
      body: `${API}&${body}`,
    });
    assert.equal(reply.status, 200, `${op}: ${reply.body}`);
  };
  const audit = (name: string) => auditPage(page, name, ARTIFACTS);
  const open = async (path: string, name: string) => {
    await page.goto(`${base}${path}`);
    await audit(name);
  };

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    server = await serve(dataDir);
    base = `https://localhost:${server.adminPort}`;
    browser = await launchChromium();
    // The pages allow no script; axe-core is injected past the policy.
    const context = await browser.newContext({ ignoreHTTPSErrors: true, bypassCSP: true });
    page = await context.newPage();
    await page.goto(`${base}/login`);
    await page.getByLabel('Password', { exact: true }).fill(server.portalPassword!);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(/\/accounts$/);
    await page.goto(`${base}/preferences/api-manager`);
    await page.getByLabel('API user name', { exact: true }).fill('auditor');
    await page.getByLabel('Password', { exact: true }).fill('auditor-password-1');
    await page.getByLabel('Repeat password', { exact: true }).fill('auditor-password-1');
    await page.getByRole('button', { name: 'Create API Account' }).click();
    await page.getByText('API user auditor created.').waitFor();
    await api(
      'createacct',
      `user=longone&domain=${LONG_DOMAIN}&email=${encodeURIComponent(LONG_EMAIL)}&package=default&quota=100`,
    );
    await api('createacct', 'user=bob&domain=bob-a11y.example&email=bob%40example.org&package=default');
    await api('suspendacct', `user=bob&reason=${encodeURIComponent(`Unpaid invoice ${'9'.repeat(60)}`)}`);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('finds nothing wrong on any page, at three widths and in the dark scheme, long values included', async () => {
    await open('/accounts', 'accounts');
    assert.ok(await page.getByRole('meter', { name: 'Disk usage of longone' }).isVisible());
    await open('/accounts/longone', 'account');
    assert.equal(await page.getByText(LONG_DOMAIN).count(), 1);
    assert.equal(await page.getByText(LONG_EMAIL).count(), 1);
    await open('/accounts/bob', 'account-suspended');
    await open('/new-account', 'account-new');
    await open('/accounts/longone/suspend', 'account-suspend');
    await open('/accounts/bob/unsuspend', 'account-unsuspend');
    await open('/accounts/longone/remove', 'account-remove');
    await open('/packages', 'packages');
    await open('/packages/default', 'package');
    await open('/packages/default/delete', 'package-delete');
    await open('/preferences/api-manager', 'api-manager');
    await open('/preferences/api-manager/auditor', 'api-user');
    await open('/preferences/api-manager/auditor/delete', 'api-user-delete');
    await open('/audit', 'audit');
    await open('/reference', 'reference');
    await open('/no/such/page', 'not-found');
  });

  it('finds nothing wrong on any refused form', async () => {
    const submit = async (button: string, name: string) => {
      await page.getByRole('button', { name: button }).click();
      await page.waitForLoadState();
      assert.match(await page.title(), /^Error: /);
      await audit(name);
    };
    await page.goto(`${base}/new-account`);
    await page.getByLabel('User name', { exact: true }).fill('Bad User');
    await page.getByLabel('Contact e-mail', { exact: true }).fill('not-an-address');
    await submit('Create account', 'account-new-refused');
    await page.goto(`${base}/accounts/longone/suspend`);
    await submit('Suspend longone', 'account-suspend-refused');
    await page.goto(`${base}/packages`);
    await page.getByLabel('Package name', { exact: true }).fill('Gold');
    await page.locator('#new-quota').fill('lots');
    await submit('Add package', 'packages-refused');
    await page.goto(`${base}/packages/default`);
    await page.getByLabel('Disk quota (MB)', { exact: true }).fill('-5');
    await submit('Save changes', 'package-refused');
    await page.goto(`${base}/packages/default/delete`);
    await submit('Delete package', 'package-delete-refused');
    await page.goto(`${base}/preferences/api-manager`);
    await page.getByLabel('API user name', { exact: true }).fill('Bad Name');
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Repeat password', { exact: true }).fill('other');
    await page.getByLabel('Allow the following IPs Only', { exact: true }).check();
    await page.getByLabel('Allowed IPs', { exact: true }).fill(`2001:db8::/48\n${'x'.repeat(80)}`);
    await page.getByLabel('Bound reseller', { exact: true }).fill('nobody');
    await submit('Create API Account', 'api-manager-refused');
    await page.goto(`${base}/preferences/api-manager/auditor`);
    await page.getByLabel('Password', { exact: true }).fill('short');
    await page.getByLabel('Repeat password', { exact: true }).fill('short');
    await submit('Reset password', 'api-user-password-refused');
    await page.goto(`${base}/preferences/api-manager/auditor`);
    await page.getByLabel('Allow the following IPs Only', { exact: true }).check();
    await submit('Change access', 'api-user-access-refused');
    // A form whose CSRF token is not the session's: the refusal page keeps the navigation.
    await page.goto(`${base}/accounts/bob/unsuspend`);
    await page.evaluate(`document.querySelector('main input[name="_csrf"]').value = 'forged'`);
    await page.getByRole('button', { name: 'Unsuspend bob' }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByRole('navigation', { name: 'Main' }).isVisible());
    await audit('refused-csrf');
    await page.context().clearCookies();
    await page.goto(`${base}/login`);
    await page.getByLabel('Password', { exact: true }).fill('not-the-password');
    await submit('Log in', 'login-refused');
    await open('/login', 'login');
    await page.getByLabel('Password', { exact: true }).fill(server.portalPassword!);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.waitForURL(/\/accounts$/);
  });

  it('takes the keyboard from the skip link to the content, and from a refused form’s summary to its fields', async () => {
    const focused = () =>
      page.evaluate(
        `(() => { const e = document.activeElement; const s = getComputedStyle(e);
           return { text: e.textContent.trim(), id: e.id, tag: e.tagName, cls: e.className,
                    outline: s.outlineStyle + ' ' + s.outlineWidth, top: e.getBoundingClientRect().top }; })()`,
      ) as Promise<{ text: string; id: string; tag: string; cls: string; outline: string; top: number }>;
    await page.goto(`${base}/accounts`);
    await page.keyboard.press('Tab');
    const skip = await focused();
    assert.equal(skip.text, 'Skip to main content');
    assert.ok(skip.top >= 0, 'the skip link shows when it has the focus');
    assert.equal(skip.outline, 'solid 3px', 'the stylesheet’s own focus mark');
    await page.keyboard.press('Enter');
    assert.match(page.url(), /#main$/);
    await page.keyboard.press('Tab');
    assert.equal((await focused()).text, 'Create an account');

    await page.goto(`${base}/new-account`);
    await page.getByLabel('User name', { exact: true }).fill('Bad User');
    await page.getByLabel('Domain', { exact: true }).fill('bad-a11y.example');
    await page.getByLabel('Contact e-mail', { exact: true }).fill('nobody');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.waitForLoadState();
    // The browser moves the focus to an autofocus element at its next rendering after the load:
    // wait for that moment (a summary never focused fails below).
    await page
      .waitForFunction("document.activeElement?.className === 'error-summary'", undefined, { timeout: 5_000 })
      .catch(() => {});
    assert.equal((await focused()).cls, 'error-summary', 'the summary has the focus on arrival');
    await page.keyboard.press('Tab');
    assert.match((await focused()).text, /^User name: /);
    await page.keyboard.press('Enter');
    const field = await focused();
    assert.equal(field.id, 'user', 'the summary’s link takes the focus to the field');
    assert.equal(await page.getByLabel('User name', { exact: true }).inputValue(), 'Bad User');
    assert.equal(await page.getByLabel('Domain', { exact: true }).inputValue(), 'bad-a11y.example');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal((await focused()).id, 'email', 'the next invalid field, the valid one between');
  });

  it('is dark when the browser prefers it, or when the page says data-theme="dark" whatever it prefers', async () => {
    const background = () => page.evaluate('getComputedStyle(document.body).backgroundColor');
    await page.goto(`${base}/accounts`);
    assert.equal(await background(), 'rgb(246, 247, 249)');
    await page.emulateMedia({ colorScheme: 'dark' });
    assert.equal(await background(), 'rgb(20, 23, 29)');
    await page.evaluate(`document.documentElement.dataset.theme = 'light'`);
    assert.equal(await background(), 'rgb(246, 247, 249)');
    await page.emulateMedia({ colorScheme: 'light' });
    await page.evaluate(`document.documentElement.dataset.theme = 'dark'`);
    assert.equal(await background(), 'rgb(20, 23, 29)');
    await auditPage(page, 'accounts-theme-dark');
  });

  it('sorts the accounts on a phone, where the column headings are not shown', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/accounts`);
    const headings = await page.locator('table.accounts thead').boundingBox();
    assert.ok(headings && headings.height <= 1, 'the column headings are not shown');
    await page.getByLabel('Sort by', { exact: true }).selectOption({ label: 'Domain' });
    await page.getByLabel('Order', { exact: true }).selectOption({ label: 'Ascending' });
    await page.getByRole('button', { name: 'Show' }).click();
    await page.waitForURL(/sort=domain&dir=$/);
    assert.deepEqual(await page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.id)), [
      'account-longone',
      'account-bob',
    ]);
    assert.equal(await page.getByLabel('Sort by', { exact: true }).inputValue(), 'domain');
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
