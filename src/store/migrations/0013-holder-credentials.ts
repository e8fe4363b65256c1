// What an account's holder logs in with (CONTRACT §14), kept in the store so that every server of a
// fleet can check it (docs/architecture.md):
// - accounts.password_hash: the account's password as a SHA-512 crypt hash, written with the
//   account's row (so a change whose system steps fail puts the old one back with the row). Null
//   for an account made before: its own server reads the hash from its shadow file once.
// - api_tokens: the holder's named API tokens, each kept as the SHA-256 of the token alone.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('password_hash', 'text').execute();
  await db.schema
    .createTable('api_tokens')
    .addColumn('hash', 'text', (column) => column.primaryKey())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('last_used_at', 'text')
    .addUniqueConstraint('api_tokens_user_name', ['user', 'name'])
    .execute();
}
