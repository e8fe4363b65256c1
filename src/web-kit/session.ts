// What the portal's and the panel's sessions have in common: a random id in an HttpOnly,
// SameSite=Strict cookie (Secure under TLS), kept in the store as a hash and ending after 30 idle
// minutes; a CSRF token per session (before login, one in its own cookie: double submit); and the
// signed cookie that carries a notice to the next page. Each surface names its own cookies:
// browsers keep cookies per host, not per port, so the portal's and the panel's must differ.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const IDLE_MS = 30 * 60_000;

/** The cookies of one surface. */
export interface CookieNames {
  /** The session id. */
  session: string;
  /** Before login there is no session: the login form's CSRF token is checked against this cookie. */
  login: string;
  /** The notice a change leaves for the page it redirects to (see noticeCookie). */
  notice: string;
}

/** What a session signs its notices with: its CSRF token, a secret only it and its pages know. */
export interface Signer {
  csrf: string;
}

export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

/** What the store keeps of a session id: the cookie alone opens a session, the store alone does not. */
export function hashOf(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** A session id as a cookie can carry it: anything longer is no session, and is not looked up. */
export function plausibleId(id: string | undefined): id is string {
  return id !== undefined && id.length > 0 && id.length <= 100;
}

export function tokensMatch(a: string | undefined, b: string | undefined): boolean {
  if (!a || !b) return false;
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 1) continue;
    const name = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (!cookies.has(name)) cookies.set(name, value);
  }
  return cookies;
}

export function cookie(
  name: string,
  value: string,
  options: { secure: boolean; maxAgeSeconds?: number },
): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  return parts.join('; ');
}

function noticeMac(session: Signer, text: string): string {
  return createHmac('sha256', session.csrf).update(`notice\u0000${text}`).digest('base64url');
}

/**
 * The cookie that carries a notice ("Account alice created.") to the next page, signed with the
 * session's own secret: only these pages, for this session, can have written it. Notices never
 * come from the address, where anyone could put words on a user's screen with a link.
 */
export function noticeCookie(name: string, session: Signer, text: string, secure: boolean): string {
  const value = `${Buffer.from(text).toString('base64url')}.${noticeMac(session, text)}`;
  return cookie(name, value, { secure, maxAgeSeconds: 60 });
}

/** The notice the request's cookie `name` carries for this session, or '' (none, or not its own). */
export function noticeOf(name: string, cookieHeader: string | undefined, session: Signer): string {
  const [encoded, mac] = (parseCookies(cookieHeader).get(name) ?? '').split('.');
  if (!encoded || !mac || encoded.length > 2000) return '';
  const text = Buffer.from(encoded, 'base64url').toString();
  return tokensMatch(mac, noticeMac(session, text)) ? text : '';
}
