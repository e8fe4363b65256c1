// Rows of an account's objects put back into the store as they were kept elsewhere: a held change's
// image (pending.ts) or a backup's record (restoreacct). Each table's rows go in as they are, but a
// domain's gets its reversed name, which is the store's own: a row kept before migration 0024, or
// carried between servers or in a backup, has none, and without it the domains under a new one
// would miss it (findOverlappingDomain).
import { reversedName } from '../core/values.ts';
import type { Db, DomainRow, ObjectRows, ObjectTable } from './schema.ts';

/** A domain's row as the store keeps it: with its labels reversed. */
export function storedDomainRow(row: DomainRow): DomainRow {
  return { ...row, reversed: reversedName(row.domain) };
}

/** Puts rows of `table`, as read from it once, back into it. */
export async function insertObjectRows<T extends ObjectTable>(
  db: Db,
  table: T,
  rows: readonly ObjectRows[T][number][],
): Promise<void> {
  if (rows.length === 0) return;
  const stored = table === 'domains' ? (rows as readonly DomainRow[]).map(storedDomainRow) : rows;
  await db
    .insertInto(table)
    .values(stored as never[])
    .execute();
}
