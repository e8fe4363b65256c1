// The cron jobs of accounts (CONTRACT §14): each a schedule of five cron fields and a one-line
// command, run as the account's user in its jail. An id names a job across the store.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('cron_jobs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user', 'text', (c) => c.notNull())
    .addColumn('schedule', 'text', (c) => c.notNull())
    .addColumn('command', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('cron_jobs_user').on('cron_jobs').column('user').execute();
}
