// A fleet of servers on one store (CONTRACT §12): the servers, with their address and heartbeat,
// and each account's server. Accounts made before are left without one; the first server of the
// fleet that holds an account's system user claims it when it starts (serve.ts).
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('servers')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('advertise_url', 'text', (column) => column.notNull())
    .addColumn('driver', 'text', (column) => column.notNull())
    .addColumn('draining', 'integer', (column) => column.notNull().defaultTo(0))
    .addColumn('started_at', 'text', (column) => column.notNull())
    .addColumn('heartbeat_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.alterTable('accounts').addColumn('server', 'text').execute();
  await db.schema.createIndex('accounts_server').on('accounts').column('server').execute();
}
