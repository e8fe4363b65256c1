import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('api_user', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('request_hash', 'text', (c) => c.notNull())
    // 0 while the first call with the key is still running.
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['api_user', 'key'])
    .execute();
  await db.schema
    .createIndex('idempotency_keys_created')
    .on('idempotency_keys')
    .column('created_ms')
    .execute();
}
