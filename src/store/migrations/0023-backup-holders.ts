// Which servers' repositories hold snapshots of each user (CONTRACT §15): a row per user and server,
// written when that server takes a snapshot of the account and kept after the account moves away or
// is removed, so that its snapshots are listed and restored through any server of the fleet. The
// servers that made a good backup before this table existed are read from the jobs.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backup_holders')
    .addColumn('user', 'text', (c) => c.notNull())
    .addColumn('server', 'text', (c) => c.notNull())
    .addColumn('first_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('backup_holders_pk', ['user', 'server'])
    .execute();
  await sql`insert into backup_holders ("user", server, first_at)
    select "user", server, min(finished_at) from backup_jobs
    where state = 'done' and finished_at is not null group by "user", server`.execute(db);
}
