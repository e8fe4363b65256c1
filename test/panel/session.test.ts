// The holder's panel: logging in and out (CONTRACT §14), its sessions (the portal's rules under
// cookies of its own), single sign-on, and the ends of a session: a suspension, a removal, a
// password change.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import { createAccount } from '../helpers.ts';
import { PORTAL_PASSWORD, login as portalLogin } from '../portal/pages.ts';
import {
  cookieValue,
  csrfOf,
  get,
  HOLDER_PASSWORD,
  holderSession,
  login,
  type PanelHarness,
  panelHarness,
  postForm,
} from './pages.ts';

/** The session cookie of a refused login: cleared, no session. */
const NO_SESSION = 'berth_panel_session=';

/** The path and query of a create_user_session URL. */
async function ssoPath(h: PanelHarness, user: string, page?: string): Promise<string> {
  const reply = await h.call('create_user_session', { user, ...(page ? { page } : {}) });
  assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
  const url = new URL((reply.body.data as { url: string }).url);
  return `${url.pathname}${url.search}`;
}

describe('the panel’s logins and sessions', () => {
  let h: PanelHarness;
  before(async () => {
    h = await panelHarness();
    for (const user of ['alice', 'bob', 'carol', 'dave', 'erin'])
      await createAccount(h, user, { password: HOLDER_PASSWORD });
  });
  after(async () => h.close());

  it('logs a holder in with the account’s user name and password, onto Home with its name and main domain', async () => {
    const shown = await get(h, '/login');
    assert.equal(shown.status, 200);
    assert.match(shown.body, /<label for="username">Username<\/label>/);
    assert.match(shown.body, /<label for="password">Password<\/label>/);
    assert.match(shown.body, /<button type="submit">Log in<\/button>/);
    const { page, cookie } = await login(h, 'alice');
    assert.equal(page.status, 303);
    assert.equal(page.headers.location, '/');
    const line = ([] as string[])
      .concat(page.headers['set-cookie'] as string[])
      .find((c) => c.startsWith('berth_panel_session='))!;
    assert.match(line, /; HttpOnly; SameSite=Strict/);
    const home = await get(h, '/', cookie);
    assert.equal(home.status, 200);
    assert.match(home.body, /Account alice, alice\.example\.com/);
    assert.match(home.body, /<html lang="en">/);
    assert.match(home.headers['content-security-policy'] as string, /default-src 'none'/);
  });

  it('sends a browser without a session to the login page', async () => {
    for (const path of ['/', '/domains', '/security']) {
      const page = await get(h, path);
      assert.equal(page.status, 303);
      assert.equal(page.headers.location, '/login');
    }
  });

  it('refuses a wrong password, counting it toward the address’s lock-out', async () => {
    const address = '198.51.100.7';
    // Names of no account: the address is locked, no account is (test/customer/lockout.test.ts).
    for (let i = 0; i < 3; i++) {
      const { page, cookie } = await login(h, `nobody${i}`, 'not-the-password', address);
      assert.equal(page.status, 403);
      assert.equal(cookie, NO_SESSION);
      assert.match(page.body, /Wrong user name or password\./);
      assert.match(page.body, /<title>Error: Log in · Berth<\/title>/);
      assert.match(page.body, new RegExp(`value="nobody${i}"`), 'the user name is kept');
    }
    const locked = await login(h, 'alice', HOLDER_PASSWORD, address);
    assert.equal(locked.page.status, 429);
    assert.equal(locked.cookie, NO_SESSION);
  });

  it('tells the holder of a suspended account so, and lets it not in', async () => {
    const reply = await h.call('suspendacct', { user: 'bob', reason: 'Unpaid' });
    assert.equal(reply.statusCode, 200);
    const { page, cookie } = await login(h, 'bob');
    assert.equal(page.status, 403);
    assert.equal(cookie, NO_SESSION);
    assert.match(page.body, /This account is suspended, so it cannot log in\./);
  });

  it('ends a session at once when its account is suspended, and when it is removed', async () => {
    const carol = await holderSession(h, 'carol');
    assert.equal((await get(h, '/', carol.cookie)).status, 200);
    await h.call('suspendacct', { user: 'carol', reason: 'Abuse' });
    const suspended = await get(h, '/domains', carol.cookie);
    assert.equal(suspended.status, 403);
    assert.match(suspended.body, /This account is suspended/);
    await h.call('unsuspendacct', { user: 'carol' });
    assert.equal((await get(h, '/', carol.cookie)).status, 303, 'the session ended with the suspension');

    const dave = await holderSession(h, 'dave');
    await h.call('removeacct', { user: 'dave' });
    await createAccount(h, 'dave', { password: HOLDER_PASSWORD });
    const gone = await get(h, '/', dave.cookie);
    assert.equal(gone.status, 303, 'a new account of the same name is not the old session’s');
    assert.equal(gone.headers.location, '/login');
  });

  it('refuses a form without the session’s CSRF token, and one from before login without the login cookie’s', async () => {
    const alice = await holderSession(h, 'alice');
    const forged = await postForm(
      h,
      '/domains',
      { _csrf: 'forged', domain: 'x.example', type: 'addon' },
      alice.cookie,
    );
    assert.equal(forged.status, 403);
    assert.match(forged.body, /did not come from this panel/);
    const shown = await get(h, '/login');
    const noCookie = await postForm(h, '/login', {
      _csrf: csrfOf(shown.body),
      username: 'alice',
      password: HOLDER_PASSWORD,
    });
    assert.equal(noCookie.status, 403);
    assert.match(noCookie.body, /The form has expired/);
  });

  it('keeps the portal’s sessions and the panel’s apart', async () => {
    const { setPortalPassword } = await import('../../src/auth/portal-password.ts');
    const { CLI } = await import('../../src/operations/audited.ts');
    await setPortalPassword(h.services, PORTAL_PASSWORD, CLI);
    const admin = await portalLogin(h);
    const holderCookie = (await holderSession(h, 'alice')).cookie;
    // The portal's cookie under the panel's name opens nothing, nor the panel's on the portal.
    const asPanel = `berth_panel_session=${admin.cookie.split('=')[1]}`;
    assert.equal((await get(h, '/', asPanel)).status, 303);
    const asPortal = `berth_session=${holderCookie.split('=')[1]}`;
    const portal = await h.admin.inject({ method: 'GET', url: '/accounts', headers: { cookie: asPortal } });
    assert.equal(portal.statusCode, 303);
  });

  it('logs out: the session ends', async () => {
    const alice = await holderSession(h, 'alice');
    const out = await postForm(h, '/logout', { _csrf: alice.csrf }, alice.cookie);
    assert.equal(out.status, 303);
    assert.equal(out.headers.location, '/login');
    assert.equal(cookieValue(out.headers, 'berth_panel_session'), 'berth_panel_session=');
    assert.equal((await get(h, '/', alice.cookie)).status, 303);
  });

  it('logs in once by a single sign-on URL, on the page asked for; used again it shows the login page', async () => {
    const path = await ssoPath(h, 'erin', 'domains');
    const first = await get(h, path);
    // The page asked for is opened from the answer (a redirect begun on billing's site would not
    // carry the session's SameSite=Strict cookie).
    assert.equal(first.status, 200);
    assert.match(first.body, /<meta http-equiv="refresh" content="0;url=\/domains">/);
    assert.match(first.body, /<a href="\/domains">/);
    const cookie = cookieValue(first.headers, 'berth_panel_session');
    const domains = await get(h, '/domains', cookie);
    assert.equal(domains.status, 200);
    assert.match(domains.body, /Account erin, erin\.example\.com/);
    const again = await get(h, path);
    assert.equal(again.status, 403);
    assert.equal(cookieValue(again.headers, 'berth_panel_session'), 'berth_panel_session=');
    assert.match(again.body, /This login link has been used already or has expired\./);
    assert.match(again.body, /<label for="username">Username<\/label>/);
    assert.equal((await get(h, '/login/sso?token=nonsense')).status, 403);
    assert.equal((await get(h, '/login/sso')).status, 403);
  });

  it('opens the page asked for', async () => {
    const opens = async (page?: string) =>
      /content="0;url=([^"]*)"/.exec((await get(h, await ssoPath(h, 'erin', page))).body)?.[1];
    assert.equal(await opens('backups'), '/backups');
    assert.equal(await opens('databases'), '/databases');
    assert.equal(await opens('ftp'), '/ftp');
    assert.equal(await opens('security'), '/security');
    assert.equal(await opens('email'), '/email');
    assert.equal(await opens('cron'), '/cron');
    assert.equal(await opens(), '/');
  });

  it('refuses a single sign-on URL of an account suspended after it was made', async () => {
    const path = await ssoPath(h, 'erin', 'home');
    await h.call('suspendacct', { user: 'erin', reason: 'Unpaid' });
    const page = await get(h, path);
    assert.equal(page.status, 403);
    assert.match(page.body, /This account is suspended/);
    await h.call('unsuspendacct', { user: 'erin' });
  });

  it('ends every session of the account on passwd, and all but its own on the holder’s change of password', async () => {
    const one = await holderSession(h, 'alice');
    const two = await holderSession(h, 'alice');
    const changed = await postForm(
      h,
      '/security/password',
      {
        _csrf: one.csrf,
        current_password: HOLDER_PASSWORD,
        password: 'New-holder-pass-2',
        password2: 'New-holder-pass-2',
      },
      one.cookie,
    );
    assert.equal(changed.status, 303, changed.body);
    assert.equal((await get(h, '/security', one.cookie)).status, 200, 'the session it came from goes on');
    assert.equal((await get(h, '/', two.cookie)).status, 303, 'the other one ended');
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.equal(entry?.operation, 'change_password');
    assert.equal(entry?.api_user, 'customer:alice');
    assert.equal(entry?.via, 'panel');

    const reply = await h.call('passwd', { user: 'alice', password: HOLDER_PASSWORD });
    assert.equal(reply.statusCode, 200);
    assert.equal((await get(h, '/', one.cookie)).status, 303, 'passwd ends them all');
    assert.equal((await login(h, 'alice')).page.status, 303, 'the new password logs in');
  });
});
