// The panel in Debian's Chromium, driven by playwright-core, against `berth serve` over HTTPS: the
// server with its billing API user and the account holders a suite asks for, one browser page at
// 1280 × 900, and the helpers the suites share. Screenshots go to test-artifacts/panel/.
import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { after, before } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { FORM, tempDir } from '../helpers.ts';
import { auditPage, launchChromium } from '../portal/audit-page.ts';
import { berth, post, type Served, serve } from '../process.ts';

export const ARTIFACTS = new URL('../../test-artifacts/panel/', import.meta.url).pathname;
export const PASSWORD = 'holder-Password-1';
const API = 'apiuser=billing&apiauth=billing-password-1';

export interface BrowserPanel {
  dataDir: string;
  server: Served;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** https://localhost:<customer port> */
  base: string;
  /** Calls the billing API's `op`; fails the test unless it answers 200. */
  api(op: string, body: string): Promise<{ data: Record<string, unknown> }>;
  /** Creates the account `user` with `domain`, the holder's password and `extra` (`&name=value…`). */
  createacct(user: string, domain: string, extra?: string): Promise<unknown>;
  /** Logs `user` in by the login form, after any earlier session is dropped. */
  logIn(user: string, password?: string): Promise<void>;
  /** Fills each field, found by its exact label, with its value. */
  fill(values: Record<string, string>): Promise<void>;
  /** axe-core on the page, with a screenshot `name`.png. */
  audit(name: string): Promise<void>;
  /** A full-page screenshot `name`.png. */
  shot(name: string): Promise<unknown>;
}

/**
 * Registers the suite's before() and after(): `berth serve` in a fresh data directory named from
 * `prefix`, the billing API user, `holders` (which creates the suite's accounts), then Chromium.
 * The fields are set once before() has run.
 */
export function browserPanel(
  prefix: string,
  holders: (panel: BrowserPanel) => Promise<unknown>,
): BrowserPanel {
  const panel = {
    dataDir: tempDir(prefix),
    base: '',
    async api(op: string, body: string) {
      const reply = await post(panel.dataDir, panel.server.adminPort, `/api/v1/${op}/`, {
        headers: FORM,
        body: `${API}&${body}`,
      });
      assert.equal(reply.status, 200, `${op}: ${reply.body}`);
      return reply.json() as { data: Record<string, unknown> };
    },
    createacct: (user: string, domain: string, extra = '') =>
      panel.api(
        'createacct',
        `user=${user}&domain=${domain}&email=${user}%40example.org&package=default&password=${PASSWORD}${extra}`,
      ),
    async logIn(user: string, password = PASSWORD) {
      const { context, page } = panel;
      await context.clearCookies();
      await page.goto(`${panel.base}/login`);
      await page.getByLabel('Username', { exact: true }).fill(user);
      await page.getByLabel('Password', { exact: true }).fill(password);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForLoadState();
    },
    async fill(values: Record<string, string>) {
      for (const [label, value] of Object.entries(values))
        await panel.page.getByLabel(label, { exact: true }).fill(value);
    },
    audit: (name: string) => auditPage(panel.page, name, ARTIFACTS),
    shot: (name: string) => panel.page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true }),
  } as BrowserPanel;

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    panel.server = await serve(panel.dataDir);
    await berth(
      ['api-user', 'create', 'billing', '--password-stdin', '--data-dir', panel.dataDir],
      'billing-password-1',
    );
    panel.base = `https://localhost:${panel.server.customerPort}`;
    await holders(panel);
    panel.browser = await launchChromium();
    // The pages allow no script; axe-core is injected past the policy.
    panel.context = await panel.browser.newContext({
      ignoreHTTPSErrors: true,
      bypassCSP: true,
      viewport: { width: 1280, height: 900 },
    });
    panel.page = await panel.context.newPage();
  });

  after(async () => {
    await panel.browser?.close();
    await panel.server?.stop();
    rmSync(panel.dataDir, { recursive: true, force: true });
  });

  return panel;
}
