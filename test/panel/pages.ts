// Calls the holder's panel in-process as a browser would: pages, forms with their CSRF token, a
// login with the account's user name and password.
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { type Harness, setup } from '../helpers.ts';
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

/** A logged-in holder of `user`: the session's cookie and the CSRF token its forms carry. */
export async function holderSession(
  h: PanelHarness,
  user: string,
): Promise<{ cookie: string; csrf: string }> {
  const { cookie } = await login(h, user);
  return { cookie, csrf: csrfOf((await get(h, '/', cookie)).body) };
}
