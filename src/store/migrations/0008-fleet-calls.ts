// Calls across a fleet (CONTRACT §12): each server's certificate fingerprint (the others pin it),
// its weight in placement and its hosting profile (shared addresses, pool, home base, name servers),
// and the mark a transaction leaves when it commits a change another server made on a system.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('servers').addColumn('tls_fingerprint', 'text').execute();
  await db.schema
    .alterTable('servers')
    .addColumn('weight', 'integer', (column) => column.notNull().defaultTo(1))
    .execute();
  await db.schema
    .alterTable('servers')
    .addColumn('profile', 'text', (column) => column.notNull().defaultTo('{}'))
    .execute();
  await db.schema
    .createTable('fleet_commits')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('at', 'text', (column) => column.notNull())
    .execute();
}
