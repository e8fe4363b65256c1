import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_ms', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('deliveries')
    .addColumn('event_id', 'text', (c) => c.notNull().references('events.id'))
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_ms', 'bigint', (c) => c.notNull())
    .addColumn('delivered_ms', 'bigint')
    .addColumn('last_error', 'text')
    .addPrimaryKeyConstraint('deliveries_pkey', ['event_id', 'target'])
    .execute();
  await db.schema
    .createIndex('deliveries_due')
    .on('deliveries')
    .columns(['delivered_ms', 'next_attempt_ms'])
    .execute();
}
