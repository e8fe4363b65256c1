// Accounts: search, and suspend or unsuspend with a reason; a usage bar per account, and where the
// driver keeps certificates, each site's.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { listAccounts } from '../store/accounts.ts';
import { errorsOf, field, type Portal, type WithSession } from './portal.ts';

const SHOWN = 200;

export function registerAccountPages(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;

  const page = async (request: FastifyRequest, data: Record<string, unknown>) => {
    const query = request.query as Record<string, string | undefined>;
    const q = String(query.q ?? '')
      .trim()
      .toLowerCase();
    const all = await listAccounts(db, null);
    const matches = q
      ? all.filter(
          (a) => a.user.includes(q) || a.domain.includes(q) || a.contactEmail.toLowerCase().includes(q),
        )
      : all;
    const notices: Record<string, string> = {
      suspended: `Account ${query.user ?? ''} suspended.`,
      unsuspended: `Account ${query.user ?? ''} unsuspended.`,
    };
    const shown = matches.slice(0, SHOWN);
    // On a server that keeps certificates (the linux driver's tls component): each one's state.
    const certificates = portal.services.driver.certificates
      ? new Map(portal.services.driver.certificates(shown).map((row) => [row.user, row]))
      : null;
    return {
      title: 'Accounts',
      nav: 'accounts',
      q,
      accounts: shown,
      certificates,
      total: matches.length,
      shown: Math.min(SHOWN, matches.length),
      notice: notices[query.notice ?? ''] ?? '',
      ...data,
    };
  };

  app.get(
    '/accounts',
    route(async (request, reply, session) =>
      portal.render(reply, 'accounts', { csrf: session.csrf, ...(await page(request, {})) }),
    ),
  );

  for (const [action, operation, done] of [
    ['suspend', 'suspendacct', 'suspended'],
    ['unsuspend', 'unsuspendacct', 'unsuspended'],
  ] as const) {
    app.post(
      `/accounts/:user/${action}`,
      route(async (request, reply, session) => {
        const { user } = request.params as { user: string };
        const params: Record<string, string> = { user };
        if (action === 'suspend' && field(request, 'reason') !== '') params.reason = field(request, 'reason');
        try {
          await portal.run(request, operation, params);
        } catch (error) {
          const errors = errorsOf(error);
          const message = Object.values(errors)[0];
          return portal.render(
            reply,
            'accounts',
            { csrf: session.csrf, ...(await page(request, { errors: { form: message } })) },
            400,
          );
        }
        return reply.redirect(`/accounts?notice=${done}&user=${encodeURIComponent(user)}`, 303);
      }),
    );
  }
}
