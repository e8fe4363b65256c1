// Preferences › API Manager: list, create, reset password, change access, delete.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  createApiUser,
  deleteApiUser,
  listApiUsers,
  resetApiUserPassword,
  setApiUserAccess,
} from '../api-users.ts';
import { ApiError } from '../errors.ts';
import { findApiUser } from '../store/api-users.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { actorOf, errorsOf, field, type Portal, type WithSession } from './portal.ts';

const BASE = '/preferences/api-manager';

/** The allowed IPs of the form: one address or range a line (commas and spaces also separate). */
function allowedIpsOf(request: FastifyRequest): string[] {
  return field(request, 'allowed_ips')
    .split(/[\s,]+/)
    .filter((line) => line !== '');
}

/** Checks the two password fields; null when they match. */
function passwordMismatch(request: FastifyRequest): Record<string, string> | null {
  return field(request, 'password') === field(request, 'password2')
    ? null
    : { password2: 'The two passwords do not match.' };
}

/** The access fields: open, or restricted to at least one address. */
function accessOf(request: FastifyRequest): { ips: string[]; error: Record<string, string> | null } {
  if (field(request, 'access') !== 'restricted') return { ips: [], error: null };
  const ips = allowedIpsOf(request);
  return {
    ips,
    error: ips.length > 0 ? null : { allowed_ips: 'List at least one address or range, one a line.' },
  };
}

const fieldOfParam: Record<string, string> = {
  allowed_ips: 'allowed_ips',
  name: 'name',
  password: 'password',
  reseller: 'reseller',
};

function formErrors(error: unknown): Record<string, string> {
  const errors = errorsOf(error);
  const [param, message] = Object.entries(errors)[0]!;
  return { [fieldOfParam[param] ?? 'form']: message! };
}

export function registerApiManager(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;
  const { crypt } = portal.services;

  const list = async (
    reply: FastifyReply,
    session: PortalSession,
    data: Record<string, unknown>,
    status = 200,
  ) =>
    portal.render(
      reply,
      'api-manager',
      {
        title: 'Preferences › API Manager',
        nav: 'api',
        csrf: session.csrf,
        users: await listApiUsers(db),
        ...data,
      },
      status,
    );

  const detail = async (
    reply: FastifyReply,
    session: PortalSession,
    name: string,
    data: Record<string, unknown>,
    status = 200,
  ) => {
    const user = await findApiUser(db, name);
    if (!user) return reply.redirect(BASE, 303);
    return portal.render(
      reply,
      'api-user',
      { title: `API user ${name}`, nav: 'api', csrf: session.csrf, user, ...data },
      status,
    );
  };

  app.get(
    BASE,
    route(async (request, reply, session) =>
      list(reply, session, { notice: portal.takeNotice(request, reply, session) }),
    ),
  );

  app.post(
    BASE,
    route(async (request, reply, session) => {
      const values = {
        name: field(request, 'name'),
        access: field(request, 'access') === 'restricted' ? 'restricted' : 'open',
        allowed_ips: field(request, 'allowed_ips'),
        reseller: field(request, 'reseller'),
      };
      const access = accessOf(request);
      const problem = passwordMismatch(request) ?? access.error;
      if (problem) return list(reply, session, { values, errors: problem }, 400);
      try {
        await createApiUser(
          db,
          crypt,
          {
            name: values.name,
            password: field(request, 'password'),
            allowedIps: access.ips,
            reseller: values.reseller.trim() || null,
          },
          actorOf(request),
        );
      } catch (error) {
        return list(reply, session, { values, errors: formErrors(error) }, 400);
      }
      return portal.redirectWithNotice(reply, session, BASE, `API user ${values.name} created.`);
    }),
  );

  app.get(
    `${BASE}/:name`,
    route(async (request, reply, session) =>
      detail(reply, session, (request.params as { name: string }).name, {}),
    ),
  );

  app.post(
    `${BASE}/:name/password`,
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      const problem = passwordMismatch(request);
      if (problem) return detail(reply, session, name, { errors: problem }, 400);
      try {
        await resetApiUserPassword(db, crypt, name, field(request, 'password'), actorOf(request));
      } catch (error) {
        return detail(reply, session, name, { errors: formErrors(error) }, 400);
      }
      const reset = `The password of ${name} was reset: the old one no longer works.`;
      return portal.redirectWithNotice(reply, session, BASE, reset);
    }),
  );

  app.post(
    `${BASE}/:name/access`,
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      const values = { access: field(request, 'access'), allowed_ips: field(request, 'allowed_ips') };
      const access = accessOf(request);
      if (access.error) return detail(reply, session, name, { values, errors: access.error }, 400);
      try {
        await setApiUserAccess(db, name, access.ips, actorOf(request));
      } catch (error) {
        return detail(reply, session, name, { values, errors: formErrors(error) }, 400);
      }
      return portal.redirectWithNotice(reply, session, BASE, `The remote access of ${name} was changed.`);
    }),
  );

  app.get(
    `${BASE}/:name/delete`,
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      if (!(await findApiUser(db, name))) return reply.redirect(BASE, 303);
      return portal.render(reply, 'confirm', {
        title: `Delete API user ${name}?`,
        nav: 'api',
        csrf: session.csrf,
        question: `Delete the API user ${name}? Billing software using it will be refused from its next call on.`,
        action: `${BASE}/${encodeURIComponent(name)}/delete`,
        button: 'Delete API user',
        back: `${BASE}/${encodeURIComponent(name)}`,
      });
    }),
  );

  app.post(
    `${BASE}/:name/delete`,
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      try {
        await deleteApiUser(db, name, actorOf(request));
      } catch (error) {
        // Already gone (deleted from the CLI or another tab): the outcome the administrator wanted.
        if (!(error instanceof ApiError)) throw error;
      }
      return portal.redirectWithNotice(reply, session, BASE, `API user ${name} deleted.`);
    }),
  );
}
