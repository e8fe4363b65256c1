// The portal's list of hosting accounts: searched, filtered by state and owner, sorted and paged.
import { sql } from 'kysely';
import { type Account, toAccount } from './accounts.ts';
import type { Db } from './schema.ts';

/** How the portal's account list is narrowed, ordered and paged. */
export interface AccountQuery {
  /** Part of the user name, the domain or the contact address. */
  text: string;
  state: 'all' | 'active' | 'suspended';
  /** Only the accounts of this owner (a reseller or root); '' for every owner. */
  owner: string;
  sort: AccountSort;
  descending: boolean;
  offset: number;
  limit: number;
}

export const ACCOUNT_SORTS = ['user', 'domain', 'package', 'owner', 'setup', 'disk'] as const;
export type AccountSort = (typeof ACCOUNT_SORTS)[number];

const SORT_COLUMNS = {
  user: 'user',
  domain: 'domain',
  package: 'package',
  owner: 'owner',
  setup: 'setup_at',
  disk: 'quota_usage',
} as const;

/** One page of the accounts that match, and how many match in all. */
export async function queryAccounts(
  db: Db,
  query: AccountQuery,
): Promise<{ accounts: Account[]; total: number }> {
  let base = db.selectFrom('accounts');
  if (query.text !== '') {
    const pattern = `%${query.text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    base = base.where((eb) =>
      eb.or([
        eb('user', 'like', sql<string>`${pattern} escape '\\'`),
        eb('domain', 'like', sql<string>`${pattern} escape '\\'`),
        eb(eb.fn('lower', ['contact_email']), 'like', sql<string>`${pattern} escape '\\'`),
      ]),
    );
  }
  if (query.state !== 'all') base = base.where('suspended', '=', query.state === 'suspended' ? 1 : 0);
  if (query.owner !== '') base = base.where('owner', '=', query.owner);
  const direction = query.descending ? 'desc' : 'asc';
  const rows = await base
    .selectAll()
    .orderBy(SORT_COLUMNS[query.sort], direction)
    .orderBy('user', direction)
    .limit(query.limit)
    .offset(query.offset)
    .execute();
  const count = await base
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return { accounts: rows.map(toAccount), total: Number(count.n) };
}

/** The users that own accounts: root and the resellers, for the portal's owner filter. */
export async function accountOwners(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('accounts').select('owner').distinct().orderBy('owner').execute();
  return rows.map((row) => row.owner);
}
