// The portal's account page lists the audit entries of one account, newest first: an index on
// (target, id) finds them without reading the whole log.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('audit_log_target').on('audit_log').columns(['target', 'id']).execute();
}
