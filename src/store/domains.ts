// The domains of accounts in the store: an account's main domain (kept in step with the account's
// own `domain`), and its addon domains, parked domains and subdomains (CONTRACT §14). Rows become
// Domain objects here and nowhere else.
import { overlapsOf, reversedName } from '../core/values.ts';
import { storedDomainRow } from './object-rows.ts';
import { noteAccount } from './pending.ts';
import type { Db, DomainRow } from './schema.ts';

export type DomainKind = DomainRow['kind'];

export interface Domain {
  domain: string;
  kind: DomainKind;
  /** Relative to the home; null for a parked domain, which serves the main site. */
  docroot: string | null;
  createdAt: Date;
  /**
   * `elsewhere`: an addon or parked domain whose mail the DNS sent to another server when it was
   * added, so not a mail domain of this one (src/operations/mail-routing.ts).
   */
  mail?: 'elsewhere';
}

/** Where the main domain is served from, relative to the home. */
export const MAIN_DOCROOT = 'public_html';

export function toDomain(row: DomainRow): Domain {
  return {
    domain: row.domain,
    kind: row.kind,
    docroot: row.docroot,
    createdAt: new Date(row.created_at),
    ...(row.mail === 'elsewhere' && { mail: 'elsewhere' as const }),
  };
}

export function toDomainRow(user: string, domain: Domain): DomainRow {
  return {
    domain: domain.domain,
    user,
    kind: domain.kind,
    docroot: domain.docroot,
    created_at: domain.createdAt.toISOString(),
    mail: domain.mail ?? null,
  };
}

/** The main domain's row of an account made at `createdAt`. */
export function mainDomain(domain: string, createdAt: Date): Domain {
  return { domain, kind: 'main', docroot: MAIN_DOCROOT, createdAt };
}

/** Orders an account's domains: the main one first, then by name. */
function byKindAndName(a: DomainRow, b: DomainRow): number {
  if ((a.kind === 'main') !== (b.kind === 'main')) return a.kind === 'main' ? -1 : 1;
  return a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0;
}

/** The account's domains, the main one first. */
export async function domainsOf(db: Db, user: string): Promise<Domain[]> {
  const rows = await db.selectFrom('domains').selectAll().where('user', '=', user).execute();
  return rows.sort(byKindAndName).map(toDomain);
}

/** The account that has `domain`, of whatever kind. */
export async function ownerOfDomain(db: Db, domain: string): Promise<string | undefined> {
  const row = await db.selectFrom('domains').select('user').where('domain', '=', domain).executeTakeFirst();
  return row?.user;
}

/** Gives the account a domain; the store refuses one another account (or this one) already has. */
export async function insertDomain(db: Db, user: string, domain: Domain): Promise<void> {
  await noteAccount(db, user);
  await db
    .insertInto('domains')
    .values(storedDomainRow(toDomainRow(user, domain)))
    .execute();
}

export async function deleteDomain(db: Db, user: string, domain: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('domains').where('user', '=', user).where('domain', '=', domain).execute();
}

/** Renames the account's main domain (its row follows the account's `domain`). */
export async function renameMainDomain(db: Db, user: string, domain: string): Promise<void> {
  await noteAccount(db, user);
  await db
    .updateTable('domains')
    .set({ domain, reversed: reversedName(domain) })
    .where('user', '=', user)
    .where('kind', '=', 'main')
    .where('domain', '!=', domain)
    .execute();
}

/** Removes every domain of the account. */
export async function deleteDomainsOf(db: Db, user: string): Promise<void> {
  await noteAccount(db, user);
  await db.deleteFrom('domains').where('user', '=', user).execute();
}

/**
 * A domain of an account other than `user` (its main domain or another) that overlaps `domain`:
 * equal to it, above it (`shop.example` for `www.shop.example`) or under it.
 */
export async function findOverlappingDomain(
  db: Db,
  domain: string,
  user: string,
): Promise<string | undefined> {
  const { atOrAbove } = overlapsOf(domain);
  // Those under it, reversed, begin with its reversed name and a dot (`/` is the byte after `.`).
  const reversed = reversedName(domain);
  // A main domain is a row of domains too; accounts, which names it as well, is asked by its key.
  const main = await db
    .selectFrom('accounts')
    .select('domain')
    .where('domain', 'in', atOrAbove)
    .where('user', '!=', user)
    .limit(1)
    .executeTakeFirst();
  if (main) return main.domain;
  const row = await db
    .selectFrom('domains')
    .select('domain')
    .where((eb) =>
      eb.or([
        eb('domain', 'in', atOrAbove),
        eb.and([eb('reversed', '>', `${reversed}.`), eb('reversed', '<', `${reversed}/`)]),
      ]),
    )
    .where('user', '!=', user)
    .limit(1)
    .executeTakeFirst();
  return row?.domain;
}
