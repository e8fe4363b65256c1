// Portal sessions: the administrator's, in the store's portal_sessions, with the cookies and the
// 30 idle minutes of every session of Berth's pages (web-kit/session.ts).
import { findSession, insertSession, type PortalSession } from '../store/portal-sessions.ts';
import type { Db } from '../store/schema.ts';
import { deleteIdleSessions, deleteSession, touchSession } from '../store/session-rows.ts';
import { type CookieNames, hashOf, IDLE_MS, plausibleId, randomToken } from '../web-kit/session.ts';

export { parseCookies } from '../web-kit/session.ts';

export const PORTAL_COOKIES: CookieNames = {
  session: 'berth_session',
  login: 'berth_login',
  notice: 'berth_notice',
};
export const SESSION_COOKIE = PORTAL_COOKIES.session;

export async function openSession(db: Db, nowMs: number): Promise<{ id: string; session: PortalSession }> {
  await deleteIdleSessions(db, 'portal_sessions', nowMs - IDLE_MS);
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
  if (!plausibleId(id)) return null;
  const session = await findSession(db, hashOf(id));
  if (!session) return null;
  if (nowMs - session.lastSeenMs > IDLE_MS) {
    await deleteSession(db, 'portal_sessions', session.idHash);
    return null;
  }
  await touchSession(db, 'portal_sessions', session.idHash, nowMs);
  return session;
}

export async function closeSession(db: Db, id: string | undefined): Promise<void> {
  if (id) await deleteSession(db, 'portal_sessions', hashOf(id));
}
