// The holder's panel sessions (CONTRACT §14): the cookies, idle time and CSRF of every session of
// Berth's pages (web-kit/session.ts), under the panel's own cookie names, in holder_sessions. A
// session works only while its account exists, is the same account (not a later one of its name)
// and is not suspended: each request checks, so a suspension or removal ends it at once.
import type { Account } from '../store/accounts.ts';
import { findAccount } from '../store/accounts.ts';
import {
  findHolderSession,
  type HolderSession,
  type HolderVia,
  insertHolderSession,
} from '../store/holder-sessions.ts';
import type { Db } from '../store/schema.ts';
import { deleteIdleSessions, deleteSession, touchSession } from '../store/session-rows.ts';
import { type CookieNames, hashOf, IDLE_MS, plausibleId, randomToken } from '../web-kit/session.ts';

export const PANEL_COOKIES: CookieNames = {
  session: 'berth_panel_session',
  login: 'berth_panel_login',
  notice: 'berth_panel_notice',
};

export async function openHolderSession(
  db: Db,
  account: Account,
  via: HolderVia,
  nowMs: number,
): Promise<{ id: string; session: HolderSession }> {
  await deleteIdleSessions(db, 'holder_sessions', nowMs - IDLE_MS);
  const id = randomToken();
  const session: HolderSession = {
    idHash: hashOf(id),
    user: account.user,
    accountSetupMs: account.setupAt.getTime(),
    via,
    csrf: randomToken(),
    createdMs: nowMs,
    lastSeenMs: nowMs,
  };
  await insertHolderSession(db, session);
  return { id, session };
}

/** What the cookie's session comes to: a holder at work, a suspended one, or nobody. */
export type Holding =
  | { state: 'active'; session: HolderSession; account: Account }
  | { state: 'suspended'; account: Account }
  | { state: 'none' };

/**
 * The session the cookie names, if it has not been idle for 30 minutes (seeing it renews it), with
 * its account read afresh. The session of a suspended, removed or replaced account is ended.
 */
export async function currentHolding(db: Db, id: string | undefined, nowMs: number): Promise<Holding> {
  if (!plausibleId(id)) return { state: 'none' };
  const session = await findHolderSession(db, hashOf(id));
  if (!session) return { state: 'none' };
  if (nowMs - session.lastSeenMs > IDLE_MS) {
    await deleteSession(db, 'holder_sessions', session.idHash);
    return { state: 'none' };
  }
  const account = await findAccount(db, session.user);
  if (!account || account.setupAt.getTime() !== session.accountSetupMs) {
    await deleteSession(db, 'holder_sessions', session.idHash);
    return { state: 'none' };
  }
  if (account.suspension !== null) {
    await deleteSession(db, 'holder_sessions', session.idHash);
    return { state: 'suspended', account };
  }
  await touchSession(db, 'holder_sessions', session.idHash, nowMs);
  return { state: 'active', session, account };
}

export async function closeHolderSession(db: Db, id: string | undefined): Promise<void> {
  if (plausibleId(id)) await deleteSession(db, 'holder_sessions', hashOf(id));
}
