// Calls the holder's panel in-process as a browser would: pages, forms with their CSRF token, a
// login with the account's user name and password.
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { createAccount, type Harness, setup } from '../helpers.ts';
import { cookieValue, csrfOf, getFrom, type Page, postFormTo } from '../portal/pages.ts';

export { cookieValue, csrfOf, type Page } from '../portal/pages.ts';

export const HOLDER_PASSWORD = 'holder-Password-1';

export interface PanelHarness extends Harness {
  customer: FastifyInstance;
}

/** A server with its customer listener, locking an address out after 3 failures. */
export async function panelHarness(): Promise<PanelHarness> {
  const h = await setup({ lockout: { maxFailures: 3, windowMinutes: 15, lockMinutes: 15 } });
  const customer = buildApp(h.services, { listener: 'customer', tls: null });
  const close = h.close;
  return Object.assign(h, {
    customer,
    close: async () => {
      await customer.close();
      await close();
    },
  });
}

export function get(h: PanelHarness, url: string, cookie = '', remoteAddress = '127.0.0.1'): Promise<Page> {
  return getFrom(h.customer, url, cookie, remoteAddress);
}

export function postForm(
  h: PanelHarness,
  url: string,
  fields: Record<string, string>,
  cookie = '',
  remoteAddress = '127.0.0.1',
): Promise<Page> {
  return postFormTo(h.customer, url, fields, cookie, remoteAddress);
}

/** Logs into the panel: the answer to the form, and the session's cookie (empty when refused). */
export async function login(
  h: PanelHarness,
  username: string,
  password = HOLDER_PASSWORD,
  remoteAddress = '127.0.0.1',
): Promise<{ page: Page; cookie: string }> {
  const shown = await get(h, '/login', '', remoteAddress);
  const page = await postForm(
    h,
    '/login',
    { _csrf: csrfOf(shown.body), username, password },
    cookieValue(shown.headers, 'berth_panel_login'),
    remoteAddress,
  );
  return { page, cookie: cookieValue(page.headers, 'berth_panel_session') };
}

/** A logged-in holder: the session's cookie and the CSRF token its forms carry. */
export interface HolderSession {
  cookie: string;
  csrf: string;
}

/** A logged-in holder of `user`: the session's cookie and the CSRF token its forms carry. */
export async function holderSession(h: PanelHarness, user: string): Promise<HolderSession> {
  const { cookie } = await login(h, user);
  return { cookie, csrf: csrfOf((await get(h, '/', cookie)).body) };
}

export interface PanelSuite<User extends string> {
  h: PanelHarness;
  /** Each account's logged-in holder, by user name. */
  holders: Record<User, HolderSession>;
  /** Posts a form as `as`, with its CSRF token. */
  post(path: string, fields: Record<string, string>, as: HolderSession): Promise<Page>;
  /** The page a redirect leads to, with the notice it carried. */
  follow(redirect: Page, as: HolderSession): Promise<Page>;
}

/**
 * Registers the suite's before() and after(): a panelHarness, and each account of `accounts`
 * created with the holder's password and its own parameters, then logged in. The fields are set
 * once before() has run.
 */
export function panelSuite<User extends string>(
  accounts: Record<User, Record<string, string>>,
): PanelSuite<User> {
  const suite = {
    holders: {} as Record<User, HolderSession>,
    post: (path: string, fields: Record<string, string>, as: HolderSession) =>
      postForm(suite.h, path, { _csrf: as.csrf, ...fields }, as.cookie),
    follow: (redirect: Page, as: HolderSession) => {
      assert.equal(redirect.status, 303, redirect.body);
      const location = String(redirect.headers.location);
      return get(
        suite.h,
        location,
        `${as.cookie}; ${redirect.headers['set-cookie']}`.replace(/;\s*Path=.*$/, ''),
      );
    },
  } as PanelSuite<User>;
  before(async () => {
    suite.h = await panelHarness();
    for (const [user, params] of Object.entries<Record<string, string>>(accounts))
      await createAccount(suite.h, user, { password: HOLDER_PASSWORD, ...params });
    for (const user of Object.keys(accounts) as User[])
      suite.holders[user] = await holderSession(suite.h, user);
  });
  after(async () => suite.h.close());
  return suite;
}
