// GET /metrics on the admin listener: Prometheus text, for an API account of the administrator's
// (HTTP Basic, as Prometheus's basic_auth sends it, or the X-API-* headers) or a portal session.

import type { FastifyInstance, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import type { Credentials } from '../auth/authenticate.ts';
import { ApiError, apiError } from '../core/errors.ts';
import { lastBackupCheck } from '../operations/backup-check.ts';
import { currentSession, parseCookies, SESSION_COOKIE } from '../portal/session.ts';
import type { Services } from '../services.ts';
import { sendError } from './api.ts';

function credentials(request: FastifyRequest): Credentials | null {
  const basic = /^Basic\s+(\S+)$/i.exec(String(request.headers.authorization ?? ''));
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon > 0 ? { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) } : null;
  }
  const user = request.headers['x-api-user'];
  const password = request.headers['x-api-password'];
  return typeof user === 'string' && typeof password === 'string' && user && password
    ? { user, password }
    : null;
}

export function registerMetrics(app: FastifyInstance, services: Services): void {
  app.get('/metrics', async (request, reply) => {
    const session = await currentSession(
      services.store.db,
      parseCookies(request.headers.cookie).get(SESSION_COOKIE),
      Date.now(),
    );
    if (!session) {
      try {
        const apiUser = await services.auth.authenticate(credentials(request), clientAddress(request));
        if (apiUser.reseller) throw apiError('forbidden', { reason: 'Metrics are the administrator’s.' });
      } catch (error) {
        if (error instanceof ApiError) return sendError(reply, error);
        throw error;
      }
    }
    return reply
      .type('text/plain; version=0.0.4; charset=utf-8')
      .send(
        await services.metrics.render(
          services.store.db,
          services.driver.reloadCounts?.(),
          services.driver.backups ? lastBackupCheck(services.config.dataDir) : undefined,
        ),
      );
  });
}
