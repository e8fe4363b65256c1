// Uids given once (CONTRACT §10): each account's uid, and the fleet's mark, the lowest uid no
// account was ever given. A uid stays taken after its account is removed, so that nothing the old
// account left (a detached process, a file in /tmp, a queued mail) belongs to a later one. Accounts
// made before keep the uid their system user has: each server records it, and raises the mark above
// every id its system has, when it starts (server.ts).
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('uid', 'bigint').execute();
  await db.schema.createIndex('accounts_uid').unique().on('accounts').column('uid').execute();
  await db.schema
    .createTable('uid_mark')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('next_uid', 'bigint', (column) => column.notNull())
    .execute();
  await db.insertInto('uid_mark').values({ name: 'accounts', next_uid: 0 }).execute();
}
