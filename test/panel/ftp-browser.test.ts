// The panel's FTP page as a holder uses it: Debian's Chromium, driven by playwright-core, against
// `berth serve` over HTTPS. An FTP account added with its login, password, directory and quota,
// listed as <login>@<main domain>; a directory through .. refused beside its field; the used-up
// limit explained beside Username; removal; the page in German; a 375 px phone and the keyboard
// alone; axe-core on the page and its refused form. Screenshots go to test-artifacts/panel/.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { auditPage } from '../portal/audit-page.ts';
import { ARTIFACTS, browserPanel } from './browser-harness.ts';

describe('the panel’s FTP page in a real browser', () => {
  const panel = browserPanel('berth-panel-ftp-', async ({ createacct }) => {
    await createacct('erin', 'erin-ftp.example', '&ftp=1');
    await createacct('dora', 'dora-ftp.example', '&ftp=2&language=de');
  });
  const { logIn, fill } = panel;
  let page: Page;
  let base: string;
  before(() => {
    ({ page, base } = panel);
  });

  it('adds an FTP account, refuses a directory out of the home and the used-up limit beside their fields, and removes it', async () => {
    await logIn('erin');
    await page.getByRole('link', { name: 'FTP' }).click();
    await page.waitForURL(`${base}/ftp`);
    assert.ok(await page.getByRole('heading', { name: 'FTP', level: 1 }).isVisible());
    assert.ok(await page.getByText('FTP accounts: 0 of 1 in use.').isVisible());
    await auditPage(page, 'ftp', ARTIFACTS);

    await fill({
      Username: 'designer',
      Password: 'Design-pass-1234',
      Directory: '../other',
      'Quota (MB)': '100',
    });
    await page.getByRole('button', { name: 'Create FTP account' }).click();
    await page.waitForLoadState();
    const directory = page.getByLabel('Directory', { exact: true });
    assert.equal(await directory.getAttribute('aria-invalid'), 'true');
    // The password is never sent back; what else was typed stays.
    assert.equal(await page.getByLabel('Password', { exact: true }).inputValue(), '');
    assert.equal(await page.getByLabel('Username', { exact: true }).inputValue(), 'designer');
    await auditPage(page, 'ftp-refused', ARTIFACTS);

    await fill({ Password: 'Design-pass-1234', Directory: 'public_html' });
    await page.getByRole('button', { name: 'Create FTP account' }).click();
    await page.getByText('FTP account designer@erin-ftp.example created.').waitFor({ timeout: 10_000 });
    const row = page.getByRole('row', { name: /designer@erin-ftp\.example/ });
    assert.match((await row.textContent()) ?? '', /public_html[\s\S]*100 MB/);

    await fill({ Username: 'second', Password: 'Second-pass-1234' });
    await page.getByRole('button', { name: 'Create FTP account' }).click();
    await page.waitForLoadState();
    const login = page.getByLabel('Username', { exact: true });
    assert.equal(await login.getAttribute('aria-invalid'), 'true');
    assert.ok(
      await page
        .getByText('Your plan allows 1 FTP accounts and all are in use.', { exact: false })
        .first()
        .isVisible(),
    );
    await page.screenshot({ path: `${ARTIFACTS}ftp-limit.png`, fullPage: true });

    await page.getByRole('button', { name: 'Remove designer@erin-ftp.example' }).click();
    await page.getByText('FTP account designer@erin-ftp.example removed.').waitFor({ timeout: 10_000 });
    assert.equal(await page.getByRole('row', { name: /designer@erin-ftp\.example/ }).count(), 0);
  });

  it('speaks the account’s language, fits a 375 px phone and takes the keyboard alone', async () => {
    await logIn('dora');
    await page.goto(`${base}/ftp`);
    assert.equal(await page.getAttribute('html', 'lang'), 'de');
    assert.ok(await page.getByRole('heading', { name: 'FTP-Zugang hinzufügen' }).isVisible());
    await page.setViewportSize({ width: 375, height: 800 });
    assert.ok(Number(await page.evaluate('document.documentElement.scrollWidth')) <= 375);
    const focusedId = () => page.evaluate('document.activeElement.id') as Promise<string>;
    await page.getByLabel('Benutzername', { exact: true }).focus();
    await page.keyboard.type('web');
    for (const [next, text] of [
      ['password', 'Web-pass-12345'],
      ['directory', 'public_html/shop'],
      ['quota', ''],
    ] as const) {
      await page.keyboard.press('Tab');
      assert.equal(await focusedId(), next);
      if (text) await page.keyboard.type(text);
    }
    await page.keyboard.press('Enter');
    await page.getByText('FTP-Zugang web@dora-ftp.example angelegt.').waitFor({ timeout: 10_000 });
    await page.screenshot({ path: `${ARTIFACTS}ftp-de-375.png`, fullPage: true });
    await auditPage(page, 'ftp-de', ARTIFACTS);
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
