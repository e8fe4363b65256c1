// The panel's sessions (CONTRACT §14): an account holder's, apart from the administrator's portal
// sessions, so that no portal session can ever pass for a holder's or the other way round. A
// session names its account and the moment that account was made: a new account of the same name
// is another holder, and the old session is not its.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('holder_sessions')
    .addColumn('id_hash', 'text', (c) => c.primaryKey())
    .addColumn('user', 'text', (c) => c.notNull())
    .addColumn('account_setup_ms', 'bigint', (c) => c.notNull())
    .addColumn('via', 'text', (c) => c.notNull())
    .addColumn('csrf', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_ms', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('holder_sessions_user').on('holder_sessions').column('user').execute();
}
