// The portal's sessions, CSRF tokens, lock-out and escaping, called in-process.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setPortalPassword } from '../../src/auth/portal-password.ts';
import { CLI } from '../../src/operations/audited.ts';
import { listAudit } from '../../src/store/audit.ts';
import { createAccount, forSuite, setup } from '../helpers.ts';
import { cookieValue, csrfOf, get, login, PORTAL_PASSWORD, portalHarness, postForm } from './pages.ts';

describe('portal sessions', () => {
  const h = forSuite(portalHarness);

  it('sends every page but the login to the login form without a session', async () => {
    for (const url of ['/', '/accounts', '/packages', '/preferences/api-manager', '/audit']) {
      const page = await get(h, url);
      assert.equal(page.status, 303, url);
      assert.equal(page.headers.location, '/login');
    }
  });

  it('gives an HttpOnly, SameSite=Strict session cookie on login, and no Secure flag without TLS', async () => {
    const { page, cookie } = await login(h);
    assert.equal(page.status, 303);
    assert.equal(page.headers.location, '/accounts');
    const line = ([] as string[])
      .concat(page.headers['set-cookie'] as string[])
      .find((c) => c.startsWith('berth_session='))!;
    assert.match(line, /HttpOnly/);
    assert.match(line, /SameSite=Strict/);
    assert.doesNotMatch(line, /Secure/);
    assert.equal((await get(h, '/accounts', cookie)).status, 200);
  });

  it('refuses a login form without its CSRF token', async () => {
    const page = await postForm(h, '/login', { username: 'root', password: PORTAL_PASSWORD });
    assert.equal(page.status, 403);
    assert.equal(cookieValue(page.headers, 'berth_session'), '');
  });

  it('refuses every form posted without the session CSRF token', async () => {
    const { cookie } = await login(h);
    for (const url of [
      '/logout',
      '/preferences/api-manager',
      '/preferences/api-manager/x/password',
      '/preferences/api-manager/x/access',
      '/preferences/api-manager/x/delete',
      '/accounts/x/suspend',
      '/accounts/x/unsuspend',
      '/packages',
      '/packages/default',
      '/packages/default/delete',
    ]) {
      assert.equal((await postForm(h, url, { _csrf: 'wrong', name: 'p' }, cookie)).status, 403, url);
    }
  });

  it('ends a session after 30 idle minutes', async () => {
    const { cookie } = await login(h);
    await h.services.store.db
      .updateTable('portal_sessions')
      .set({ last_seen_ms: Date.now() - 31 * 60_000 })
      .execute();
    const page = await get(h, '/accounts', cookie);
    assert.equal(page.status, 303);
    assert.equal(page.headers.location, '/login');
  });

  it('counts failed logins toward the same lock-out as the API', async () => {
    const address = '198.51.100.50';
    for (let i = 0; i < 3; i++) assert.equal((await login(h, 'wrong-password', address)).page.status, 403);
    const api = await h.request({
      url: '/api/v1/test_connection/',
      headers: { 'x-api-user': 'billing', 'x-api-password': 'billing-secret-1' },
      remoteAddress: address,
    });
    assert.equal(api.statusCode, 429);
    const locked = await login(h, PORTAL_PASSWORD, address);
    assert.equal(locked.page.status, 429);
    assert.equal(locked.cookie, '');
  });

  it('escapes what it shows, so that a hostile reason stays text', async () => {
    await createAccount(h, 'victim');
    await h.call('suspendacct', {
      user: 'victim',
      reason: '<script>alert(1)</script><img src=x onerror=alert(2)>',
    });
    const { cookie } = await login(h);
    const page = await get(h, '/accounts', cookie);
    assert.ok(!page.body.includes('<script>alert'));
    assert.ok(!page.body.includes('<img src=x'));
    assert.ok(page.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
    const account = await get(h, '/accounts/victim', cookie);
    assert.ok(!account.body.includes('<script>alert'));
    assert.ok(account.body.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  });

  it('shows no words a link puts in its address: notices come from the server alone', async () => {
    const { cookie } = await login(h);
    await createAccount(h, 'linked');
    const words = 'Your session expired: call 555-0100 and give your password';
    const links = [
      `/accounts?notice=removed&user=${encodeURIComponent(words)}`,
      `/accounts/linked?notice=created&user=${encodeURIComponent(words)}`,
      `/packages?notice=added&name=${encodeURIComponent(words)}`,
      `/preferences/api-manager?notice=password&name=${encodeURIComponent(words)}`,
      `/accounts?notice=${encodeURIComponent(words)}`,
    ];
    for (const link of links) {
      const page = await get(h, link, cookie);
      assert.equal(page.status, 200, link);
      assert.doesNotMatch(page.body, /555-0100|class="notice"/, link);
    }
  });

  it("shows a change's notice once, and only from the cookie this session's change left", async () => {
    const first = await login(h);
    const csrf = csrfOf((await get(h, '/packages', first.cookie)).body);
    const added = await postForm(h, '/packages', { _csrf: csrf, name: 'Flash' }, first.cookie);
    assert.equal(added.status, 303);
    assert.equal(added.headers.location, '/packages');
    const notice = cookieValue(added.headers, 'berth_notice');
    const shown = await get(h, '/packages', `${first.cookie}; ${notice}`);
    assert.match(shown.body, /<p class="notice" role="status">Package Flash added\.<\/p>/);
    assert.equal(cookieValue(shown.headers, 'berth_notice'), 'berth_notice=', 'the notice is cleared');
    // Another session cannot be shown it, nor a notice whose text was changed.
    const other = await login(h, PORTAL_PASSWORD, '127.0.0.3');
    assert.doesNotMatch((await get(h, '/packages', `${other.cookie}; ${notice}`)).body, /class="notice"/);
    const [, mac] = notice.slice('berth_notice='.length).split('.');
    const forged = `berth_notice=${Buffer.from('Call 555-0100').toString('base64url')}.${mac}`;
    assert.doesNotMatch((await get(h, '/packages', `${first.cookie}; ${forged}`)).body, /555-0100/);
  });

  it('sends its security headers on every page', async () => {
    const page = await get(h, '/login');
    assert.match(
      String(page.headers['content-security-policy']),
      /default-src 'none'.*frame-ancestors 'none'/,
    );
    assert.equal(page.headers['x-frame-options'], 'DENY');
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
  });
});

describe('portal logins and passwords', () => {
  const h = forSuite(portalHarness);

  it('ends every session when the portal password changes', async () => {
    const first = await login(h);
    const second = await login(h, PORTAL_PASSWORD, '127.0.0.2');
    assert.equal((await get(h, '/accounts', first.cookie)).status, 200);
    await setPortalPassword(h.services, 'a-new-portal-password', CLI);
    for (const { cookie } of [first, second]) {
      const page = await get(h, '/accounts', cookie);
      assert.equal(page.status, 303);
      assert.equal(page.headers.location, '/login');
    }
    await setPortalPassword(h.services, PORTAL_PASSWORD, CLI);
  });

  it('never hashes a password no account can have', async () => {
    let hashes = 0;
    const verify = h.services.crypt.verify.bind(h.services.crypt);
    h.services.crypt.verify = (password, hash) => {
      hashes++;
      return verify(password, hash);
    };
    try {
      const { page } = await login(h, 'x'.repeat(60_000), '192.0.2.60');
      assert.equal(page.status, 403);
      assert.equal(hashes, 0);
    } finally {
      h.services.crypt.verify = verify;
    }
  });

  it('answers a locked-out address 429 with Retry-After', async () => {
    for (let i = 0; i < 3; i++) await login(h, `wrong-password-${i}`, '192.0.2.61');
    const { page } = await login(h, PORTAL_PASSWORD, '192.0.2.61');
    assert.equal(page.status, 429);
    assert.ok(Number(page.headers['retry-after']) > 0);
  });

  it('never locks a trusted address out of the portal, and locks any other one alone', async () => {
    const trusting = await setup({
      trustedAddresses: ['127.0.0.1'],
      lockout: { maxFailures: 3, windowMinutes: 15, lockMinutes: 15 },
    });
    try {
      await setPortalPassword(trusting.services, PORTAL_PASSWORD, CLI);
      for (let i = 0; i < 8; i++)
        assert.equal((await login(trusting, `wrong-password-${i}`, '127.0.0.1')).page.status, 403);
      const trusted = await login(trusting, PORTAL_PASSWORD, '127.0.0.1');
      assert.equal(trusted.page.status, 303);
      assert.notEqual(trusted.cookie, '');
      for (let i = 0; i < 3; i++) await login(trusting, `wrong-password-${i}`, '192.0.2.62');
      assert.equal((await login(trusting, PORTAL_PASSWORD, '192.0.2.62')).page.status, 429);
      assert.equal((await login(trusting, PORTAL_PASSWORD, '127.0.0.1')).page.status, 303);
    } finally {
      await trusting.close();
    }
  });

  it('audits an API account made in the portal under root and the client address', async () => {
    const { cookie } = await login(h, PORTAL_PASSWORD, '192.0.2.70');
    const page = await get(h, '/preferences/api-manager', cookie, '192.0.2.70');
    const created = await postForm(
      h,
      '/preferences/api-manager',
      {
        _csrf: csrfOf(page.body),
        name: 'fromportal',
        password: 'portal-made-1',
        password2: 'portal-made-1',
        access: 'open',
        allowed_ips: '',
        reseller: '',
      },
      cookie,
      '192.0.2.70',
    );
    assert.equal(created.status, 303, created.body);
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.deepEqual(
      [entry!.api_user, entry!.address, entry!.operation, entry!.target, entry!.status],
      ['root', '192.0.2.70', 'api-user create', 'fromportal', 200],
    );
  });
});
