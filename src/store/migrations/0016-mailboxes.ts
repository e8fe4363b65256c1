// The account holder's mailboxes and forwarders (CONTRACT §14). An address is unique across the
// store, as the domains it lies in are. A mailbox keeps its password as a SHA-512 crypt hash only;
// a forwarder keeps its destinations comma-separated.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mailboxes')
    .addColumn('email', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('password_hash', 'text', (column) => column.notNull())
    .addColumn('quota', 'integer')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('mailboxes_user').on('mailboxes').column('user').execute();
  await db.schema
    .createTable('forwarders')
    .addColumn('email', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('destinations', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('forwarders_user').on('forwarders').column('user').execute();
}
