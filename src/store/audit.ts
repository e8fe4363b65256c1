// The audit log: one entry for every state-changing call, successful or refused.
import type { Insertable } from 'kysely';
import type { AuditRow, AuditTable, Db } from './schema.ts';

export type AuditEntry = Insertable<AuditTable>;

/**
 * Who acted, in words, for the audit log's readers: `administrator`, `reseller`, `holder`, with
 * the account acted for and how the principal came (`administrator for alice, api`); `?` for an
 * entry whose principal was not known (refused before, or written before principals were kept).
 */
export function principalText(entry: Pick<AuditRow, 'principal' | 'via' | 'acting_for'>): string {
  if (entry.principal === null) return '?';
  const who = entry.principal === 'admin' ? 'administrator' : entry.principal;
  const forWhom = entry.acting_for === null ? '' : ` for ${entry.acting_for}`;
  return `${who}${forWhom}${entry.via === null ? '' : `, ${entry.via}`}`;
}

export async function appendAudit(db: Db, entry: AuditEntry): Promise<void> {
  await db.insertInto('audit_log').values(entry).execute();
}

/** The newest entries first; with `target`, only those about that account or user. */
export async function listAudit(
  db: Db,
  options: { limit: number; offset?: number; target?: string },
): Promise<AuditRow[]> {
  let query = db.selectFrom('audit_log').selectAll();
  if (options.target !== undefined) query = query.where('target', '=', options.target);
  const rows = await query
    .orderBy('id', 'desc')
    .limit(options.limit)
    .offset(options.offset ?? 0)
    .execute();
  return rows.map((row) => ({ ...row, id: Number(row.id), status: Number(row.status) }));
}

export async function countAudit(db: Db): Promise<number> {
  const row = await db
    .selectFrom('audit_log')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
