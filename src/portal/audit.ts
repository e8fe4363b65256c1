// The audit log, newest first, fifty entries a page.
import type { FastifyInstance } from 'fastify';
import { countAudit, listAudit } from '../store/audit.ts';
import type { Portal, WithSession } from './portal.ts';

const PER_PAGE = 50;

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
        entries,
        page,
        pages,
        total,
      });
    }),
  );
}
