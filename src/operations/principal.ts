// Who calls an operation, and for whom (CONTRACT §3, §4, §14). Every surface turns its request
// into one principal; rights, scope, limits, the audit entry, events, Idempotency-Keys and changes
// sent across the fleet are all worked out from it, never from a surface's own notion of a user.
import type { Account, Scope } from '../store/accounts.ts';

/** The API account a call authenticated as. */
export interface ApiAccount {
  name: string;
  /** What the account's Idempotency-Keys belong to: a new account of the same name has others. */
  id: string;
}

/** The administrator: through an API account, the portal or the command line. */
export interface Administrator {
  kind: 'admin';
  via: 'api' | 'portal' | 'cli';
  /** The API account of a call through the API; null for the portal and the command line. */
  apiAccount: ApiAccount | null;
  address: string;
  /** The account holder the administrator acts for (CONTRACT §14, `/api/account/<op>/`). */
  actingFor?: Account;
}

/** A reseller, through an API account bound to it or naming it in X-RESELLER (CONTRACT §4). */
export interface Reseller {
  kind: 'reseller';
  via: 'api';
  apiAccount: ApiAccount;
  reseller: Account;
  address: string;
  /** The account holder, one of the reseller's accounts, the reseller acts for. */
  actingFor?: Account;
}

/**
 * An account's holder (CONTRACT §14): logged into the panel with the account's password (`panel`)
 * or by single sign-on (`sso`), or calling the customer API with the password (`password`, HTTP
 * Basic) or an API token it made (`token`).
 */
export interface Holder {
  kind: 'holder';
  via: 'panel' | 'sso' | 'password' | 'token';
  account: Account;
  /** The panel session or API token the call came with, so that ending it ends the holder's calls. */
  credential: string | null;
  address: string;
}

export type Principal = Administrator | Reseller | Holder;

/** A principal that came through an API account (the admin and reseller listeners). */
export type ApiPrincipal = (Administrator & { via: 'api'; apiAccount: ApiAccount }) | Reseller;
export type PrincipalKind = Principal['kind'];
export type Via = Principal['via'];

/** Whom an operation serves: what it declares it may be called by (Operation.audiences). */
export type Audience = PrincipalKind;

/** The administrator at the command line. */
export const CLI_PRINCIPAL: Administrator = { kind: 'admin', via: 'cli', apiAccount: null, address: 'cli' };

/** The audience a call is made in: an administrator or reseller acting for a holder is a holder. */
export function audienceOf(principal: Principal): Audience {
  return principal.kind !== 'holder' && principal.actingFor ? 'holder' : principal.kind;
}

/** The reseller account a call acts as; null for the administrator and for holders. */
export function resellerOf(principal: Principal): Account | null {
  return principal.kind === 'reseller' ? principal.reseller : null;
}

/** The account whose holder's side a call is on: the holder's own, or the one acted for. */
export function holderAccountOf(principal: Principal): Account | null {
  return principal.kind === 'holder' ? principal.account : (principal.actingFor ?? null);
}

/**
 * Which accounts a call reaches. A holder's, and that of anyone acting for a holder, is exactly
 * that one account, whatever the operation; a reseller's is the accounts it owns; the
 * administrator's is every account.
 */
export function scopeOf(principal: Principal): Scope {
  const holder = holderAccountOf(principal);
  if (holder) return { user: holder.user };
  return principal.kind === 'reseller' ? { owner: principal.reseller.user } : null;
}

/**
 * Who acted, as the audit log's `api_user` and the events' `api_user` show it: the API account,
 * `root` for the portal and the command line, `customer:<user>` for a holder. No API account
 * name holds a colon, so no API account can pass for a holder.
 */
export function actorName(principal: Principal): string {
  if (principal.kind === 'holder') return `customer:${principal.account.user}`;
  return principal.apiAccount?.name ?? 'root';
}

/**
 * Whose Idempotency-Keys a call's key is among. An API account's own id, as always; the portal and
 * the command line; a holder's account. Acting for a holder keeps the actor's keys: the holder is
 * part of the request (idempotency.ts), so one key cannot be spent on two holders.
 */
export function idempotencyOwner(principal: Principal): string {
  // The holder of this account, not of any account of the same name made before or after it.
  if (principal.kind === 'holder')
    return `holder:${principal.account.user}:${principal.account.setupAt.toISOString()}`;
  return principal.apiAccount?.id ?? principal.via;
}

/** An administrator or reseller acting for the holder of `account`, which must be in its scope. */
export function actingFor<P extends Administrator | Reseller>(principal: P, account: Account): P {
  return { ...principal, actingFor: account };
}

/** What the audit log keeps of a principal, besides the actor's name and the reseller. */
export function auditedPrincipal(principal: Principal): {
  principal: PrincipalKind;
  via: Via;
  acting_for: string | null;
} {
  return {
    principal: principal.kind,
    via: principal.via,
    acting_for: principal.kind === 'holder' ? null : (principal.actingFor?.user ?? null),
  };
}

/**
 * A principal as it travels to another server of the fleet with a change it asked for (CONTRACT
 * §12): everything it is, its accounts by name. The other server checks that the change is within
 * its scope, and logs who asked.
 */
export interface PrincipalMessage {
  kind: PrincipalKind;
  via: Via;
  api_account: ApiAccount | null;
  reseller: string | null;
  /** The holder's own account, or the one an administrator or reseller acts for. */
  holder: string | null;
  credential: string | null;
  address: string;
}

export function principalMessage(principal: Principal): PrincipalMessage {
  return {
    kind: principal.kind,
    via: principal.via,
    api_account: principal.kind === 'holder' ? null : principal.apiAccount,
    reseller: resellerOf(principal)?.user ?? null,
    holder: holderAccountOf(principal)?.user ?? null,
    credential: principal.kind === 'holder' ? principal.credential : null,
    address: principal.address,
  };
}

const VIAS: Record<PrincipalKind, readonly Via[]> = {
  admin: ['api', 'portal', 'cli'],
  reseller: ['api'],
  holder: ['panel', 'sso', 'password', 'token'],
};
const NAME = /^[a-z][a-z0-9]{0,15}$/;

/** The principal a message carries, or null when it is not one that can exist. */
export function principalOfMessage(value: unknown): PrincipalMessage | null {
  if (typeof value !== 'object' || value === null) return null;
  const m = value as Record<string, unknown>;
  const kind = m.kind as PrincipalKind;
  if (!Object.hasOwn(VIAS, kind) || !VIAS[kind].includes(m.via as Via)) return null;
  const name = (v: unknown) => v === null || (typeof v === 'string' && NAME.test(v));
  const text = (v: unknown) => v === null || typeof v === 'string';
  const account = m.api_account as Record<string, unknown> | null;
  const apiAccount =
    account === null || (typeof account === 'object' && text(account.name) && text(account.id));
  if (!name(m.reseller) || !name(m.holder) || !text(m.credential) || typeof m.address !== 'string')
    return null;
  if (!apiAccount || (kind === 'reseller') !== (m.reseller !== null)) return null;
  // A holder is its account, with no API account; the others have one exactly when through the API.
  const whole =
    kind === 'holder' ? m.holder !== null && account === null : (m.via === 'api') === (account !== null);
  if (!whole) return null;
  return {
    kind,
    via: m.via as Via,
    api_account: account === null ? null : { name: String(account.name), id: String(account.id) },
    reseller: m.reseller as string | null,
    holder: m.holder as string | null,
    credential: m.credential as string | null,
    address: m.address,
  };
}

/** The scope of the principal a message carries, as scopeOf gives it. */
export function scopeOfMessage(message: PrincipalMessage): Scope {
  if (message.holder !== null) return { user: message.holder };
  return message.reseller !== null ? { owner: message.reseller } : null;
}
