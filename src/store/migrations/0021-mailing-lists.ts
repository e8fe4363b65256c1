// The account holder's mailing lists (CONTRACT §14): a list's address is unique across the store,
// as mailboxes' and forwarders' are; its owner is one address anywhere, its members (those the
// holder added) are kept comma-separated, as a forwarder's destinations are.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mailing_lists')
    .addColumn('email', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('owner', 'text', (column) => column.notNull())
    .addColumn('members', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('mailing_lists_user').on('mailing_lists').column('user').execute();
}
