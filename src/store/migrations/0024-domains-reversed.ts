// domains.reversed: the domain's labels in reverse order (`shop.example` is `example.shop`), so that
// the domains under a name (`*.shop.example`, whose reversed forms begin with `example.shop.`) are a
// range of an index rather than a scan of every row: a new domain is checked against every
// account's, and at ten thousand accounts the scan was most of createacct's own work in the store.
// Compared bytewise ("C" on PostgreSQL, whose other collations order `.` apart from its bytes).
import { type Kysely, sql } from 'kysely';
import { reversedName } from '../../core/values.ts';
import type { DialectName } from './index.ts';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  await db.schema
    .alterTable('domains')
    .addColumn('reversed', dialect === 'postgres' ? sql`text collate "C"` : 'text', (column) =>
      column.notNull().defaultTo(''),
    )
    .execute();
  const rows: { domain: string }[] = await db.selectFrom('domains').select('domain').execute();
  for (const { domain } of rows)
    await db
      .updateTable('domains')
      .set({ reversed: reversedName(domain) })
      .where('domain', '=', domain)
      .execute();
  await db.schema.createIndex('domains_reversed').on('domains').column('reversed').execute();
}
