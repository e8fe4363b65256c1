// The domains of an account (CONTRACT §14): its main domain, and the addon domains, parked domains
// and subdomains its holder adds. A domain is unique across the store, so across the fleet. Each
// account made before gets the row of its main domain, served from public_html as it always was.
import { type Kysely, sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('domains')
    .addColumn('domain', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('docroot', 'text')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.alterTable('pending_changes').addColumn('objects', 'text').execute();
  await db.schema.createIndex('domains_user').on('domains').column('user').execute();
  await db
    .insertInto('domains')
    .columns(['domain', 'user', 'kind', 'docroot', 'created_at'])
    .expression(
      db
        .selectFrom('accounts')
        .select([
          'domain',
          'user',
          sql.lit('main').as('kind'),
          sql.lit('public_html').as('docroot'),
          'setup_at',
        ]),
    )
    .execute();
}
