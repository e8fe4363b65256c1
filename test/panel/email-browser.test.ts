// The panel's Email and Cron jobs pages as a holder uses them: Debian's Chromium, driven by
// playwright-core, against `berth serve` over HTTPS. A mailbox made with the contract's labels,
// its password and quota changed, a forwarder, a mailing list and its members, a cron job; the
// keyboard alone through a form; a 375 px phone; axe-core on every page and refused form. Screenshots go to test-artifacts/panel/.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { ARTIFACTS, browserPanel } from './browser-harness.ts';

describe('the panel’s Email and Cron jobs pages in a real browser', () => {
  const panel = browserPanel('berth-panel-email-', ({ createacct }) =>
    createacct('mara', 'mara-panel.example', '&email_accounts=1&maillist=2'),
  );
  const { audit } = panel;
  let page: Page;
  let base: string;
  const field = (label: string) => page.getByLabel(label, { exact: true });
  const submit = async (button: string) => {
    await page.getByRole('button', { name: button, exact: true }).click();
    await page.waitForLoadState();
  };

  before(async () => {
    ({ page, base } = panel);
    await panel.logIn('mara');
  });

  it('creates a mailbox with the contract’s labels, explains the limit, and changes its password and quota', async () => {
    await page.getByRole('link', { name: 'Email', exact: true }).click();
    await page.waitForLoadState();
    assert.ok(await page.getByRole('heading', { name: 'Email', level: 1 }).isVisible());
    await audit('email');
    await field('Email address').fill('info@mara-panel.example');
    await field('Password').fill('Mailbox-pass-1');
    await field('Quota (MB)').fill('50');
    await submit('Create mailbox');
    assert.ok(await page.getByText('Mailbox info@mara-panel.example created.').isVisible());
    const table = page.getByRole('table', { name: 'Your mailboxes' });
    assert.ok(await table.getByRole('cell', { name: 'info@mara-panel.example', exact: true }).isVisible());
    assert.ok(await table.getByRole('cell', { name: '50 MB', exact: true }).isVisible());
    await field('Email address').fill('second@mara-panel.example');
    await field('Password').fill('Mailbox-pass-2');
    await submit('Create mailbox');
    assert.match(await page.title(), /^Error: /);
    const address = field('Email address');
    assert.equal(await address.getAttribute('aria-invalid'), 'true');
    assert.match(
      (await page
        .locator(`#${await address.getAttribute('aria-describedby').then((d) => d!.split(' ').pop())}`)
        .textContent()) ?? '',
      /Your plan allows 1 mailboxes and all are in use/,
    );
    await audit('email-limit-reached');

    await page.getByRole('link', { name: 'Password and quota info@mara-panel.example' }).click();
    await page.waitForLoadState();
    assert.ok(
      await page.getByRole('heading', { name: 'Mailbox info@mara-panel.example', level: 1 }).isVisible(),
    );
    await audit('mailbox');
    await field('New password').fill('Mailbox-pass-3');
    await field('Repeat new password').fill('Mailbox-pass-4');
    await submit('Change password');
    assert.match(await page.title(), /^Error: /);
    await audit('mailbox-refused');
    await field('New password').fill('Mailbox-pass-3');
    await field('Repeat new password').fill('Mailbox-pass-3');
    await submit('Change password');
    assert.ok(await page.getByText('The password of info@mara-panel.example has been changed.').isVisible());
    await field('Quota (MB)').fill('75');
    await submit('Change quota');
    assert.ok(await page.getByText('The quota of info@mara-panel.example is now 75 MB.').isVisible());
  });

  it('adds and removes a forwarder', async () => {
    await page.goto(`${base}/email`);
    await field('Forward from').fill('sales@mara-panel.example');
    await field('Forward to').fill('someone@example.org');
    await submit('Add forwarder');
    assert.ok(await page.getByText('Forwarder sales@mara-panel.example added.').isVisible());
    await submit('Remove sales@mara-panel.example');
    assert.ok(await page.getByText('Forwarder sales@mara-panel.example removed.').isVisible());
  });

  it('creates mailing lists up to the limit, explains it beside List address, and removes one', async () => {
    await page.goto(`${base}/email`);
    assert.ok(await page.getByText('Mailing lists: 0 of 2 in use.').isVisible());
    for (const name of ['news', 'team']) {
      await field('List address').fill(`${name}@mara-panel.example`);
      await field('Owner').fill('owner@example.org');
      await submit('Create list');
      assert.ok(await page.getByText(`Mailing list ${name}@mara-panel.example created.`).isVisible());
    }
    const table = page.getByRole('table', { name: 'Your mailing lists' });
    assert.ok(await table.getByRole('cell', { name: 'news@mara-panel.example', exact: true }).isVisible());
    assert.ok(await table.getByRole('cell', { name: 'owner@example.org', exact: true }).first().isVisible());
    await field('List address').fill('third@mara-panel.example');
    await field('Owner').fill('owner@example.org');
    await submit('Create list');
    assert.match(await page.title(), /^Error: /);
    const address = field('List address');
    assert.equal(await address.getAttribute('aria-invalid'), 'true');
    assert.match(
      (await page
        .locator(`#${await address.getAttribute('aria-describedby').then((d) => d!.split(' ').pop())}`)
        .textContent()) ?? '',
      /Your plan allows 2 mailing lists and all are in use/,
    );
    assert.equal(await field('Owner').inputValue(), 'owner@example.org');
    await audit('email-lists-limit-reached');
    await page.goto(`${base}/email`);
    await submit('Remove team@mara-panel.example');
    assert.ok(
      await page.getByText('Mailing list team@mara-panel.example removed, with its members.').isVisible(),
    );
    assert.ok(await page.getByText('Mailing lists: 1 of 2 in use.').isVisible());
    await audit('email-lists');
  });

  it('adds a list’s member from the keyboard alone on the list’s page, refuses a bad one beside its field, and removes one', async () => {
    await page.goto(`${base}/email`);
    await page.getByRole('link', { name: 'Members news@mara-panel.example' }).click();
    await page.waitForLoadState();
    assert.ok(
      await page.getByRole('heading', { name: 'Mailing list news@mara-panel.example', level: 1 }).isVisible(),
    );
    await audit('mailing-list');
    const focusedId = () => page.evaluate('document.activeElement.id') as Promise<string>;
    await field('Member address').focus();
    assert.equal(await focusedId(), 'member-email');
    await page.keyboard.type('reader@example.org');
    await page.keyboard.press('Enter');
    await page.getByText('reader@example.org is now a member of news@mara-panel.example.').waitFor({
      timeout: 10_000,
    });
    const table = page.getByRole('table', { name: 'Members you added' });
    assert.ok(await table.getByRole('cell', { name: 'reader@example.org', exact: true }).isVisible());
    await audit('mailing-list-member-added');
    await field('Member address').fill('reader@example.org');
    await field('Member address').press('Enter');
    await page.getByRole('alert').waitFor({ timeout: 10_000 });
    assert.match(await page.title(), /^Error: /);
    assert.equal(await field('Member address').getAttribute('aria-invalid'), 'true');
    await audit('mailing-list-refused');
    await field('Member address').fill('second@example.net');
    await submit('Add member');
    assert.ok(
      await page.getByText('second@example.net is now a member of news@mara-panel.example.').isVisible(),
    );
    await submit('Remove second@example.net');
    assert.ok(
      await page
        .getByText('second@example.net is no longer a member of news@mara-panel.example.')
        .isVisible(),
    );
    assert.equal(await table.getByRole('cell', { name: 'second@example.net', exact: true }).count(), 0);
  });

  it('adds a cron job from the keyboard alone, refuses a bad schedule beside its field, and removes the job', async () => {
    await page.goto(`${base}/cron`);
    await audit('cron');
    const focusedId = () => page.evaluate('document.activeElement.id') as Promise<string>;
    await field('Schedule').focus();
    await page.keyboard.type('every day');
    await page.keyboard.press('Tab');
    assert.equal(await focusedId(), 'command');
    await page.keyboard.type('php public_html/cron.php');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').waitFor({ timeout: 10_000 });
    assert.match(await page.title(), /^Error: /);
    assert.equal(await field('Schedule').getAttribute('aria-invalid'), 'true');
    await audit('cron-refused');
    await field('Schedule').fill('*/5 * * * *');
    await field('Schedule').press('Enter');
    await page.getByText('Cron job added.').waitFor({ timeout: 10_000 });
    const table = page.getByRole('table', { name: 'Your cron jobs' });
    assert.ok(await table.getByRole('cell', { name: 'php public_html/cron.php', exact: true }).isVisible());
    await audit('cron-added');
    await submit('Remove */5 * * * * php public_html/cron.php');
    assert.ok(await page.getByText('Cron job removed.').isVisible());
  });

  it('fits a 375 px phone on every page', async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of [
      '/email',
      '/email/mailbox?email=info%40mara-panel.example',
      '/email/list?email=news%40mara-panel.example',
      '/cron',
    ]) {
      await page.goto(`${base}${path}`);
      assert.ok(Number(await page.evaluate('document.documentElement.scrollWidth')) <= 375, path);
      await page.screenshot({
        path: `${ARTIFACTS}${path.split('?')[0]!.slice(1).replace('/', '-')}-375.png`,
        fullPage: true,
      });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });
});
