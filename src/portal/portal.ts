// The web portal on the admin listener: the administrator (`root`) logs in with the portal password
// and manages API accounts, hosting accounts, packages and reads the audit log. Server-rendered
// with auto-escaping templates; no script runs in the page.
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import { portalPasswordHash } from '../auth/portal-password.ts';
import { ApiError, catalogue, FieldErrors } from '../core/errors.ts';
import { execute } from '../operations/execute.ts';
import { paramErrors, type RawParams } from '../operations/operation.ts';
import type { Registry } from '../operations/registry.ts';
import type { Services } from '../services.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { KIT_STYLESHEET, SECURITY_HEADERS } from '../web-kit/render.ts';
import {
  cookie,
  noticeCookie,
  noticeOf,
  parseCookies,
  randomToken,
  tokensMatch,
} from '../web-kit/session.ts';
import { registerAccountPages } from './accounts.ts';
import { registerApiManager } from './api-manager.ts';
import { registerAuditPage } from './audit.ts';
import { registerPackagePages } from './packages.ts';
import { actorOf, field, notFound, PORTAL_USER, type Portal, renderPage, type WithSession } from './page.ts';
import { closeSession, currentSession, openSession, PORTAL_COOKIES, SESSION_COOKIE } from './session.ts';

const { login: LOGIN_COOKIE, notice: NOTICE_COOKIE } = PORTAL_COOKIES;
const LOGIN_FORM: FormSpec = {
  username: { label: 'Username' },
  password: { label: 'Password', secret: true },
};
const STYLESHEET = readFileSync(KIT_STYLESHEET);

/**
 * The admin listener's answer for an unknown address outside /api: a portal page (the API's own
 * paths keep their JSON 404).
 */
export function portalNotFound(services: Services) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
    const session = await currentSession(services.store.db, id, Date.now());
    reply.headers(SECURITY_HEADERS);
    return notFound(reply, session, `The portal has no page at ${request.url.split('?')[0]}.`);
  };
}

/** The portal, whose forms call `options.operations` as the administrator. */
export function registerPortal(
  app: FastifyInstance,
  services: Services,
  options: { secure: boolean; operations: Registry },
): void {
  const { db } = services.store;
  const secure = options.secure;

  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });

  const portal: Portal = {
    services,
    render: renderPage,
    async run(request, name, params) {
      const actor = actorOf(request);
      const operation = options.operations.find(name)!;
      const raw: RawParams = new Map(Object.entries(params).map(([key, value]) => [key, [value]]));
      try {
        return await execute(services, {
          operation,
          params: raw,
          address: actor.address,
          claimedUser: PORTAL_USER,
          identify: async () => actor,
        });
      } catch (error) {
        // The call stops at its first bad parameter (and is audited so); the form shows them all.
        if (!(error instanceof ApiError) || error.param === undefined) throw error;
        const all = paramErrors(operation.params, raw, services.config);
        throw all.length > 1 ? new FieldErrors(all) : error;
      }
    },
    redirectWithNotice(reply, session, to, notice) {
      reply.header('set-cookie', noticeCookie(NOTICE_COOKIE, session, notice, secure));
      return reply.redirect(to, 303);
    },
    takeNotice(request, reply, session) {
      if (!parseCookies(request.headers.cookie).has(NOTICE_COOKIE)) return '';
      reply.header('set-cookie', cookie(NOTICE_COOKIE, '', { secure, maxAgeSeconds: 0 }));
      return noticeOf(NOTICE_COOKIE, request.headers.cookie, session);
    },
  };

  /** Wraps a handler that needs a logged-in session (and, for POST, a matching CSRF token). */
  const withSession: WithSession = (handler) => async (request, reply) => {
    const id = parseCookies(request.headers.cookie).get(SESSION_COOKIE);
    const session = await currentSession(db, id, Date.now());
    if (!session) return reply.redirect('/login', 303);
    if (request.method === 'POST' && !tokensMatch(field(request, '_csrf'), session.csrf)) {
      return portal.render(
        reply,
        'error',
        {
          title: 'Refused',
          message:
            'The form has expired or did not come from this portal. Go back, reload the page and try again.',
          csrf: session.csrf,
          nav: 'none',
        },
        403,
      );
    }
    return handler(request, reply, session);
  };

  app.get('/static/kit.css', async (_request, reply) =>
    reply.type('text/css; charset=utf-8').header('cache-control', 'max-age=3600').send(STYLESHEET),
  );

  app.get('/', async (request, reply) => {
    const session = await currentSession(
      db,
      parseCookies(request.headers.cookie).get(SESSION_COOKIE),
      Date.now(),
    );
    return reply.redirect(session ? '/accounts' : '/login', 303);
  });

  const showLogin = (
    reply: FastifyReply,
    data: { values?: Record<string, string>; errors?: FormErrors },
    status = 200,
  ) => {
    const token = randomToken();
    reply.header('set-cookie', cookie(LOGIN_COOKIE, token, { secure, maxAgeSeconds: 3600 }));
    const form = formView(LOGIN_FORM, data.values, data.errors);
    return portal.render(reply, 'login', { title: 'Log in', csrf: token, form }, status);
  };

  app.get('/login', async (_request, reply) => showLogin(reply, {}));

  // The API reference, for integrators: public, rendered from the operations' own schemas.
  const operationsList = [...options.operations.operations.values()];
  const errorCodes = Object.entries(catalogue).map(([code, entry]) => ({ code, ...entry }));
  app.get('/reference', async (request, reply) => {
    const session = await currentSession(
      db,
      parseCookies(request.headers.cookie).get(SESSION_COOKIE),
      Date.now(),
    );
    return portal.render(reply, 'reference', {
      title: 'API reference',
      nav: session ? 'reference' : '',
      csrf: session?.csrf ?? '',
      operations: operationsList,
      errorCodes,
    });
  });

  app.post('/login', async (request, reply) => {
    const address = clientAddress(request);
    const username = field(request, 'username');
    if (!tokensMatch(field(request, '_csrf'), parseCookies(request.headers.cookie).get(LOGIN_COOKIE))) {
      return showLogin(
        reply,
        { values: { username }, errors: { form: 'The form has expired: please log in again.' } },
        403,
      );
    }
    const refuse = (error: unknown) => {
      if (!(error instanceof ApiError)) throw error;
      reply.headers(error.headers);
      return showLogin(reply, { values: { username }, errors: { form: error.message } }, error.status);
    };
    const hash = await portalPasswordHash(db);
    let loggedIn: boolean;
    try {
      await services.lockout.check(address);
      // The same checks as an API login: no hash for an impossible length, a few per address.
      loggedIn = await services.auth.attempt(
        address,
        PORTAL_USER,
        hash,
        field(request, 'password'),
        username === PORTAL_USER,
      );
    } catch (error) {
      return refuse(error);
    }
    if (!loggedIn) {
      return showLogin(
        reply,
        { values: { username }, errors: { form: 'Wrong user name or password.' } },
        403,
      );
    }
    const { id } = await openSession(db, Date.now());
    reply.header('set-cookie', [
      cookie(SESSION_COOKIE, id, { secure }),
      cookie(LOGIN_COOKIE, '', { secure, maxAgeSeconds: 0 }),
    ]);
    return reply.redirect('/accounts', 303);
  });

  app.post(
    '/logout',
    withSession(async (request, reply) => {
      await closeSession(db, parseCookies(request.headers.cookie).get(SESSION_COOKIE));
      reply.header('set-cookie', cookie(SESSION_COOKIE, '', { secure, maxAgeSeconds: 0 }));
      return reply.redirect('/login', 303);
    }),
  );

  registerApiManager(app, portal, withSession);
  registerAccountPages(app, portal, withSession);
  registerPackagePages(app, portal, withSession);
  registerAuditPage(app, portal, withSession);
}
