// Single sign-on tokens (CONTRACT §14): each lets a browser into one account's panel once, within
// two minutes. Only the token's hash is kept; the token itself is in the URL billing was given.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sso_tokens')
    .addColumn('token_hash', 'text', (column) => column.primaryKey())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('page', 'text', (column) => column.notNull())
    .addColumn('expires_ms', 'bigint', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('sso_tokens_expires').on('sso_tokens').column('expires_ms').execute();
  await db.schema.createIndex('sso_tokens_user').on('sso_tokens').column('user').execute();
}
