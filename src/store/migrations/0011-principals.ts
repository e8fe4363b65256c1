// One principal for every audience (src/operations/principal.ts):
// - audit_log.principal, via, acting_for: the kind of principal that acted (`admin`, `reseller`,
//   `holder`), how it came (`api`, `portal`, `cli`, `panel`, `sso`, `password`, `token`) and the
//   account holder an administrator or reseller acted for. Null in the entries written before,
//   and in those of a call refused before its principal was known.
// - idempotency_keys.api_user becomes owner: keys belong to a principal (an API account's id as
//   before, or an account holder), not only to API accounts.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of ['principal', 'via', 'acting_for']) {
    await db.schema.alterTable('audit_log').addColumn(column, 'text').execute();
  }
  await db.schema.alterTable('idempotency_keys').renameColumn('api_user', 'owner').execute();
}
