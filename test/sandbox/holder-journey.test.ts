// The account holder's side from end to end, in `berth sandbox` (CONTRACT §13, §14), as billing
// and a customer use it: a billing-style client creates an account and asks for a single sign-on
// URL; Chromium opens that URL as it is given and, in the panel, adds an addon domain, a parked
// domain and a subdomain; each answers over HTTPS with a certificate Pebble issued through ACME;
// the account's limit stops one more with its explanation beside the field; suspension and then
// removal take every one of them down.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Browser, Page } from 'playwright-core';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { launchChromium } from '../portal/audit-page.ts';
import { curl, insecureRequest, type RunningSandbox, sandboxCall, startSandbox } from '../process.ts';

const ARTIFACTS = new URL('../../test-artifacts/holder-journey/', import.meta.url).pathname;
const DOMAINS = [
  { domain: 'journey-shop.example', type: 'Addon domain', docroot: '', body: 'shop' },
  { domain: 'journey.example.net', type: 'Parked domain', docroot: '', body: 'main' },
  { domain: 'blog.journey.example', type: 'Subdomain', docroot: 'blog', body: 'blog' },
];

describe('the holder’s side from billing to the browser, in the sandbox', () => {
  const dataDir = tempDir('berth-journey-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  let browser: Browser;
  let page: Page;

  /** A site's page over HTTPS, trusting Pebble's root alone (or, with `insecure`, anything). */
  const site = (domain: string, insecure = false) =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      ...(insecure ? ['-k'] : ['--cacert', sandbox.acme_root_ca]),
      `https://${domain}:${sandbox.https_port}/`,
    ]);
  /** The site's page once its ACME certificate is in place: within 90 seconds of the call. */
  const acmePage = async (domain: string) => {
    let reply = site(domain);
    for (let i = 0; i < 450 && reply.status !== 200; i++) {
      await sleep(200);
      reply = site(domain);
    }
    return reply;
  };

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    running = await startSandbox(dataDir);
    sandbox = running.info;
    // The URL names the sandbox's host; the browser reaches it on this machine, as a customer's
    // browser reaches a server by its name.
    browser = await launchChromium(['--host-resolver-rules=MAP sandbox.test 127.0.0.1']);
    const context = await browser.newContext({
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 900 },
    });
    page = await context.newPage();
  });
  after(async () => {
    await browser?.close();
    if (running && running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('billing creates the account and gets a single sign-on URL that opens the panel on Domains', async () => {
    const made = await sandboxCall(sandbox, 'createacct', {
      user: 'journey',
      domain: 'journey.example',
      email: 'journey@example.org',
      package: 'default',
      addondomains: '1',
      parkeddomains: '1',
      subdomains: '1',
    });
    assert.equal(made.status, 200, made.info);
    const reply = await insecureRequest(Number(new URL(sandbox.api).port), '/api/v1/create_user_session/', {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-api-user': sandbox.api_user,
        'x-api-password': sandbox.api_password,
      },
      body: 'user=journey&page=domains',
    });
    assert.equal(reply.status, 200, reply.body);
    const { url } = (JSON.parse(reply.body) as { data: { url: string } }).data;
    assert.match(url, /^https:\/\/sandbox\.test:[0-9]+\/login\/sso\?token=/);
    await page.goto(url);
    await page.waitForURL(/\/domains$/);
    assert.ok(await page.getByText('journey.example').first().isVisible());
    // Once: the same URL again shows the login page.
    const again = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
    await again.goto(url);
    assert.ok(await again.getByRole('button', { name: 'Log in' }).isVisible());
  });

  it('adds an addon domain, a parked domain and a subdomain; each answers over HTTPS with an ACME certificate', async () => {
    for (const { domain, type, docroot } of DOMAINS) {
      await page.getByLabel('Domain', { exact: true }).fill(domain);
      await page.getByLabel('Type', { exact: true }).selectOption({ label: type });
      await page.getByLabel('Document root', { exact: true }).fill(docroot);
      await page.getByRole('button', { name: 'Add domain' }).click();
      await page.waitForURL(/\/domains$/);
      assert.ok(await page.getByRole('cell', { name: domain, exact: true }).isVisible(), domain);
    }
    await page.screenshot({ path: `${ARTIFACTS}domains.png`, fullPage: true });
    const write = await running.asUser(
      'journey',
      [
        'printf main > /home/journey/public_html/index.html',
        'printf shop > /home/journey/public_html/journey-shop.example/index.html',
        'printf blog > /home/journey/blog/index.html',
      ].join(' && '),
    );
    assert.equal(write.code, 0, write.stderr);
    for (const { domain, body } of DOMAINS) {
      const reply = await acmePage(domain);
      assert.equal(reply.status, 200, `${domain}: ${reply.body}`);
      assert.equal(reply.body, body, domain);
    }
  });

  it('refuses one more addon domain with the limit explained beside the field', async () => {
    await page.getByLabel('Domain', { exact: true }).fill('journey-two.example');
    await page.getByLabel('Type', { exact: true }).selectOption({ label: 'Addon domain' });
    await page.getByLabel('Document root', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Add domain' }).click();
    const type = page.getByLabel('Type', { exact: true });
    assert.equal(await type.getAttribute('aria-invalid'), 'true');
    const described = (await type.getAttribute('aria-describedby')) ?? '';
    const explanation = await page
      .locator(
        described
          .split(' ')
          .map((id) => `#${id}`)
          .join(', '),
      )
      .allInnerTexts();
    assert.match(explanation.join(' '), /allows 1 of this type/);
    await page.screenshot({ path: `${ARTIFACTS}limit.png`, fullPage: true });
    assert.notEqual(site('journey-two.example', true).body, 'shop');
  });

  it('suspension takes every domain down to 503, removal takes them away', async () => {
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'journey', reason: 'unpaid' })).status,
      200,
    );
    for (const { domain } of [{ domain: 'journey.example' }, ...DOMAINS])
      assert.equal(site(domain, true).status, 503, domain);
    assert.equal((await sandboxCall(sandbox, 'removeacct', { user: 'journey' })).status, 200);
    for (const { domain, body } of [{ domain: 'journey.example', body: 'main' }, ...DOMAINS]) {
      const reply = site(domain, true);
      assert.notEqual(reply.status, 200, domain);
      assert.notEqual(reply.body, body, domain);
    }
    const left = await running.exec([
      '/usr/bin/ls',
      '/etc/berth/certs',
      '/etc/bind/zones',
      '/var/www/berth-sites',
    ]);
    assert.doesNotMatch(left.stdout, /journey/);
  });
});
