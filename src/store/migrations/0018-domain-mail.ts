// domains.mail: 'elsewhere' for an addon or parked domain whose mail the DNS sent to another server
// when it was added (src/operations/mail-routing.ts): no mail domain of this server. Null for every
// other domain, and for those added before, whose mail is this server's as it was.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('domains').addColumn('mail', 'text').execute();
}
