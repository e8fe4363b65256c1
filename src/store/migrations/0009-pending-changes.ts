// Changes whose system steps are running (CONTRACT §8): the store already holds them, and each
// account they touch is held here, with its row as it was before, until the steps are done and the
// row goes, or they fail and the old row comes back (at start, too, after a crash).
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('pending_changes')
    .addColumn('user', 'text', (column) => column.primaryKey())
    .addColumn('txn', 'text', (column) => column.notNull())
    .addColumn('server', 'text', (column) => column.notNull())
    .addColumn('domain', 'text', (column) => column.notNull())
    .addColumn('before', 'text')
    .addColumn('package', 'text')
    .addColumn('created_ms', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('pending_changes_txn').on('pending_changes').column('txn').execute();
}
