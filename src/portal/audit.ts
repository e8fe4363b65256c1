// The audit log, newest first, fifty entries a page.
import type { FastifyInstance } from 'fastify';
import { countAudit, listAudit, principalText } from '../store/audit.ts';
import type { AuditRow } from '../store/schema.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Portal, WithSession } from './page.ts';

const PER_PAGE = 50;

/** The table kit's columns and row of one audit entry, on the log's page and an account's. */
export function auditTable(entries: readonly AuditRow[], withTarget: boolean) {
  const labels = ['Time', 'API user', 'Principal', 'Reseller', 'Address', 'Operation', 'Target', 'Status'];
  const shown = withTarget ? labels : labels.filter((label) => label !== 'Reseller' && label !== 'Target');
  const rows = entries.map((e) => {
    const status = {
      text: `${e.status}${e.code ? ` ${e.code}` : ''}`,
      class: e.status === 200 ? 'ok' : 'refused',
    };
    const cells = withTarget
      ? [
          formatDate(e.at),
          e.api_user,
          principalText(e),
          e.reseller ?? '—',
          e.address,
          e.operation,
          e.target ?? '—',
          status,
        ]
      : [formatDate(e.at), e.api_user, principalText(e), e.address, e.operation, status];
    return { cells };
  });
  return { columns: shown.map((label) => ({ label })), rows };
}

export function registerAuditPage(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;
  app.get(
    '/audit',
    route(async (request, reply, session) => {
      const requested = Number((request.query as Record<string, string | undefined>).page ?? '1');
      const total = await countAudit(db);
      const pages = Math.max(1, Math.ceil(total / PER_PAGE));
      const page = Number.isInteger(requested) && requested >= 1 ? Math.min(requested, pages) : 1;
      const entries = await listAudit(db, { limit: PER_PAGE, offset: (page - 1) * PER_PAGE });
      return portal.render(reply, 'audit', {
        title: 'Audit log',
        nav: 'audit',
        csrf: session.csrf,
        table: auditTable(entries, true),
        page,
        pages,
        total,
      });
    }),
  );
}
