// Changes made outside the API operations — to API accounts and to the portal password, from the
// portal or the command line — are audited like calls (CONTRACT §8): who, from where, what, on
// which API account, and how it ended, refusals included.
import { ApiError } from '../core/errors.ts';
import { auditableApiUser } from '../core/values.ts';
import { appendAudit } from '../store/audit.ts';
import type { Db } from '../store/schema.ts';
import { type Administrator, actorName, auditedPrincipal, CLI_PRINCIPAL } from './principal.ts';

/** Who makes a change: the administrator, from the portal (at its client address) or the command line. */
export type Actor = Administrator;

/** The command line, as the audit log shows it. */
export const CLI: Actor = CLI_PRINCIPAL;

/**
 * Runs `change` and appends its audit entry: `operation` (the command's name, e.g. `api-user
 * delete`), the API account it names (shown as the audit log shows claimed names), its status.
 */
export async function audited<T>(
  db: Db,
  actor: Actor,
  operation: string,
  target: string | null,
  change: () => Promise<T>,
): Promise<T> {
  const append = (status: number, code: string | null) =>
    appendAudit(db, {
      at: new Date().toISOString(),
      api_user: actorName(actor),
      reseller: null,
      ...auditedPrincipal(actor),
      address: actor.address,
      operation,
      target: target === null ? null : auditableApiUser(target),
      status,
      code,
    });
  let result: T;
  try {
    result = await change();
  } catch (error) {
    const refusal = error instanceof ApiError ? error : null;
    await append(refusal?.status ?? 500, refusal?.code ?? 'internal');
    throw error;
  }
  await append(200, null);
  return result;
}
