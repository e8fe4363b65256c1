// Portal sessions: a random id in an HttpOnly, SameSite=Strict cookie (Secure under TLS), kept in
// the store as a hash, ending after 30 idle minutes; each carries the CSRF token of its forms.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import {
  deleteIdleSessions,
  deleteSession,
  findSession,
  insertSession,
  type PortalSession,
  touchSession,
} from '../store/portal-sessions.ts';
import type { Db } from '../store/schema.ts';

export const SESSION_COOKIE = 'berth_session';
/** Before login there is no session: the login form's CSRF token is checked against this cookie. */
export const LOGIN_COOKIE = 'berth_login';
export const IDLE_MS = 30 * 60_000;
/** The notice a change leaves for the page it redirects to (see noticeCookie). */
export const NOTICE_COOKIE = 'berth_notice';

export function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

function hashOf(id: string): string {
  return createHash('sha256').update(id).digest('hex');
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

export async function openSession(db: Db, nowMs: number): Promise<{ id: string; session: PortalSession }> {
  await deleteIdleSessions(db, nowMs - IDLE_MS);
  const id = randomToken();
  const session = { idHash: hashOf(id), csrf: randomToken(), createdMs: nowMs, lastSeenMs: nowMs };
  await insertSession(db, session);
  return { id, session };
}

/** The session the cookie names, if it has not been idle for 30 minutes; seeing it renews it. */
export async function currentSession(
  db: Db,
  id: string | undefined,
  nowMs: number,
): Promise<PortalSession | null> {
  if (!id || id.length > 100) return null;
  const session = await findSession(db, hashOf(id));
  if (!session) return null;
  if (nowMs - session.lastSeenMs > IDLE_MS) {
    await deleteSession(db, session.idHash);
    return null;
  }
  await touchSession(db, session.idHash, nowMs);
  return session;
}

export async function closeSession(db: Db, id: string | undefined): Promise<void> {
  if (id) await deleteSession(db, hashOf(id));
}

function noticeMac(session: PortalSession, text: string): string {
  return createHmac('sha256', session.csrf).update(`notice\u0000${text}`).digest('base64url');
}

/**
 * The cookie that carries a notice ("Account alice created.") to the next page, signed with the
 * session's own secret: only this portal, for this session, can have written it. Notices never come
 * from the address, where anyone could put words on the administrator's screen with a link.
 */
export function noticeCookie(session: PortalSession, text: string, secure: boolean): string {
  const value = `${Buffer.from(text).toString('base64url')}.${noticeMac(session, text)}`;
  return cookie(NOTICE_COOKIE, value, { secure, maxAgeSeconds: 60 });
}

/** The notice the request's cookie carries for this session, or '' (none, or not this portal's). */
export function noticeOf(cookieHeader: string | undefined, session: PortalSession): string {
  const [encoded, mac] = (parseCookies(cookieHeader).get(NOTICE_COOKIE) ?? '').split('.');
  if (!encoded || !mac || encoded.length > 2000) return '';
  const text = Buffer.from(encoded, 'base64url').toString();
  return tokensMatch(mac, noticeMac(session, text)) ? text : '';
}
