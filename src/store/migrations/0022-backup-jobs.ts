// Backup runs (CONTRACT §15): each a job with its state in the store, for the account's own server
// to take. `active_user` is the account's user while the job waits or runs and null after: its
// unique index keeps at most one such job per account, whichever server or call asks.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('active_user', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('snapshot', 'text')
    .addColumn('error', 'text')
    .execute();
  await db.schema
    .createIndex('backup_jobs_active')
    .on('backup_jobs')
    .column('active_user')
    .unique()
    .execute();
  await db.schema.createIndex('backup_jobs_user').on('backup_jobs').columns(['user', 'created_at']).execute();
}
