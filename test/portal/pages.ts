// Calls the portal in-process as a browser would: pages, forms with their CSRF token, a login.

import type { FastifyInstance } from 'fastify';
import { setPortalPassword } from '../../src/auth/portal-password.ts';
import { CLI } from '../../src/operations/audited.ts';
import { FORM, form, type Harness, setup } from '../helpers.ts';

export const PORTAL_PASSWORD = 'portal-password-1';

export interface Page {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/** A page of `app` (the admin listener's portal, the customer listener's panel). */
export async function getFrom(
  app: FastifyInstance,
  url: string,
  cookie = '',
  remoteAddress = '127.0.0.1',
): Promise<Page> {
  const reply = await app.inject({ method: 'GET', url, headers: { cookie }, remoteAddress });
  return { status: reply.statusCode, headers: reply.headers, body: reply.body };
}

/** A form sent to `app`, as a browser sends it. */
export async function postFormTo(
  app: FastifyInstance,
  url: string,
  fields: Record<string, string>,
  cookie = '',
  remoteAddress = '127.0.0.1',
): Promise<Page> {
  const reply = await app.inject({
    method: 'POST',
    url,
    headers: { ...FORM, cookie },
    payload: form(fields),
    remoteAddress,
  });
  return { status: reply.statusCode, headers: reply.headers, body: reply.body };
}

export function get(h: Harness, url: string, cookie = '', remoteAddress = '127.0.0.1'): Promise<Page> {
  return getFrom(h.admin, url, cookie, remoteAddress);
}

export function postForm(
  h: Harness,
  url: string,
  fields: Record<string, string>,
  cookie = '',
  remoteAddress = '127.0.0.1',
): Promise<Page> {
  return postFormTo(h.admin, url, fields, cookie, remoteAddress);
}

export function csrfOf(html: string): string {
  return /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
}

export function cookieValue(headers: Record<string, unknown>, name: string): string {
  const all = ([] as string[]).concat((headers['set-cookie'] as string | string[] | undefined) ?? []);
  const line = all.find((c) => c.startsWith(`${name}=`)) ?? '';
  return line.split(';')[0] ?? '';
}

export async function login(
  h: Harness,
  password = PORTAL_PASSWORD,
  remoteAddress = '127.0.0.1',
): Promise<{ page: Page; cookie: string }> {
  const form = await get(h, '/login', '', remoteAddress);
  const loginCookie = cookieValue(form.headers, 'berth_login');
  const page = await postForm(
    h,
    '/login',
    { _csrf: csrfOf(form.body), username: 'root', password },
    loginCookie,
    remoteAddress,
  );
  return { page, cookie: cookieValue(page.headers, 'berth_session') };
}

/** A server whose portal password is PORTAL_PASSWORD, locking an address out after 3 failures. */
export async function portalHarness(): Promise<Harness> {
  const h = await setup({ lockout: { maxFailures: 3, windowMinutes: 15, lockMinutes: 15 } });
  await setPortalPassword(h.services, PORTAL_PASSWORD, CLI);
  return h;
}

/** A session of the portal's administrator: its cookie, and the CSRF token its forms carry. */
export async function signedIn(h: Harness): Promise<{ cookie: string; csrf: string }> {
  const { cookie } = await login(h);
  return { cookie, csrf: csrfOf((await get(h, '/accounts', cookie)).body) };
}
