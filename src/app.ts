// Builds the Fastify application for one listener (admin, reseller, or customer: CONTRACT §14). server.ts starts the listeners; tests build the
// application in-process and call it with inject().
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import Fastify, { type FastifyInstance } from 'fastify';
import { holderNetwork } from './auth/holders.ts';
import { ApiError, apiError } from './core/errors.ts';
import { registerFleet } from './fleet/routes.ts';
import { auditRefusal, type Listener, registerApi, sendApiError, sendError } from './http/api.ts';
import { registerBodyParsers } from './http/body.ts';
import { guardConnections } from './http/connections.ts';
import { registerMetrics } from './http/metrics.ts';
import { RequestLog } from './http/request-log.ts';
import type { TlsFiles } from './http/tls.ts';
import { apiOperations, customerOperations } from './operations/registry.ts';
import { panelNotFound, registerPanel } from './panel/panel.ts';
import { portalNotFound, registerPortal } from './portal/portal.ts';
import type { Services } from './services.ts';

export interface AppOptions {
  listener: Listener;
  tls: TlsFiles | null;
}

/**
 * Fastify's own failures (a content type no parser takes) in the envelope of the catalogue. The
 * body's size is Berth's to limit: its parsers read the body themselves (readBody, 413).
 */
function fromFastifyError(error: { code?: string; statusCode?: number }): ApiError {
  if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return apiError('unsupported_media_type', { type: 'unknown' });
  if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
    return apiError('invalid_parameter', { reason: 'the request could not be read' });
  }
  return apiError('internal', {});
}

export function buildApp(services: Services, options: AppOptions): FastifyInstance {
  const { config } = services;
  const { limits } = config;
  // Slow clients (slow-loris) are cut off: headers, the whole request and idle keep-alive
  // connections each have their time, checked every second (Node's default: every 30 seconds).
  const serverOptions = {
    headersTimeout: limits.headerTimeout * 1000,
    requestTimeout: limits.requestTimeout * 1000,
    keepAliveTimeout: limits.keepAliveTimeout * 1000,
    connectionsCheckingInterval: 1000,
  };
  const serverFactory = (handler: RequestListener) => {
    const server = options.tls
      ? createHttpsServer({
          ...serverOptions,
          key: options.tls.key,
          cert: options.tls.cert,
          minVersion: 'TLSv1.2',
          handshakeTimeout: limits.headerTimeout * 1000,
        })
      : createHttpServer(serverOptions);
    server.maxConnections = limits.maxConnections;
    const guarded = guardConnections(
      server,
      {
        headerTimeoutMs: limits.headerTimeout * 1000,
        maxConnectionsPerAddress: limits.maxConnectionsPerAddress,
        exempt: config.trustedProxies,
        // The customer listener is the account next door's to reach from the server itself, or
        // from a whole IPv6 /64: counted by network as the holders' lock-out is.
        ...(options.listener === 'customer' && { networkOf: holderNetwork }),
      },
      handler,
    );
    return server.on('request', guarded);
  };
  // Fastify is given the log only at debug, for its line a request: given a log at all, it follows
  // every response to its end to time it, which cost a call more than all of Berth's own work for
  // it (docs/decisions.md). Failures are logged by the error handler below at any level.
  const app = Fastify({
    ...(services.log.isLevelEnabled('debug') && {
      loggerInstance: services.log.child({ listener: options.listener }),
      logController: new RequestLog(),
    }),
    trustProxy: config.trustedProxies.length > 0 ? config.trustedProxies : false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
    connectionTimeout: limits.requestTimeout * 1000,
    keepAliveTimeout: limits.keepAliveTimeout * 1000,
    requestTimeout: limits.requestTimeout * 1000,
    return503OnClosing: true,
    serverFactory,
  }) as unknown as FastifyInstance;

  registerBodyParsers(app);
  // On every answer, API and portal alike: no content sniffing, and under TLS a browser that has
  // been here once comes back over HTTPS only. Set by the API's own first hook, and by a hook of
  // each other part: one hook at the root for this alone cost every API call 3% of its time in
  // Fastify's hook runner. A callback hook: an async one costs every call a promise.
  const everyAnswer: Record<string, string> = { 'x-content-type-options': 'nosniff' };
  if (options.tls) everyAnswer['strict-transport-security'] = 'max-age=31536000';
  const withEveryAnswer = (register: (part: FastifyInstance) => void) =>
    app.register(async (part) => {
      part.addHook('onRequest', (_request, reply, done) => {
        reply.headers(everyAnswer);
        done();
      });
      register(part);
    });
  // Each part in its own encapsulated context: the API's hooks run for API calls only, the
  // portal's (sessions, security headers) for portal pages only.
  if (options.listener === 'customer') {
    app.register(async (api) => registerApi(api, services, 'customer', everyAnswer, customerOperations));
    withEveryAnswer((panel) => registerPanel(panel, services, { secure: options.tls !== null }));
  } else
    app.register(async (api) =>
      registerApi(api, services, options.listener, everyAnswer, apiOperations, customerOperations),
    );
  if (options.listener === 'admin') {
    withEveryAnswer((portal) =>
      registerPortal(portal, services, { secure: options.tls !== null, operations: apiOperations }),
    );
    withEveryAnswer((metrics) => registerMetrics(metrics, services));
    withEveryAnswer((fleet) => registerFleet(fleet, services));
  }

  app.setErrorHandler(async (error, request, reply) => {
    reply.headers(everyAnswer);
    const failure = error instanceof ApiError ? error : fromFastifyError(error as { code?: string });
    if (failure.status >= 500)
      services.log.error(
        { err: error, listener: options.listener, reqId: request.id, path: request.url.split('?')[0] },
        'request failed',
      );
    // A body refused before the operation ran (413, 415, one that does not parse) is audited.
    await auditRefusal(services, request, failure);
    return sendApiError(services, reply, failure);
  });
  // Outside /api, the admin listener answers with a portal page, the customer listener with a
  // panel page.
  const webPage =
    options.listener === 'admin'
      ? portalNotFound(services)
      : options.listener === 'customer'
        ? panelNotFound(services)
        : null;
  app.setNotFoundHandler((request, reply) => {
    reply.headers(everyAnswer);
    return webPage && !/^\/api(\/|$)/.test(request.url)
      ? webPage(request, reply)
      : sendError(reply, apiError('unknown_operation', { path: request.url.split('?')[0]! }));
  });
  return app;
}
