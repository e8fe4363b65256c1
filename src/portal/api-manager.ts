// Preferences › API Manager: list, create, reset password, change access, delete.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  createApiUser,
  deleteApiUser,
  listApiUsers,
  newApiUserErrors,
  resetApiUserPassword,
  setApiUserAccess,
} from '../auth/api-users.ts';
import { ApiError } from '../core/errors.ts';
import { parsePassword } from '../core/values.ts';
import { findApiUser } from '../store/api-users.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { type FormErrors, type FormSpec, formView, refusal } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import { actorOf, field, listPage, type Portal, type WithSession } from './page.ts';

const BASE = '/preferences/api-manager';

/** The allowed IPs of the form: one address or range a line (commas and spaces also separate). */
function allowedIpsOf(request: FastifyRequest): string[] {
  return field(request, 'allowed_ips')
    .split(/[\s,]+/)
    .filter((line) => line !== '');
}

const CREATE_FORM: FormSpec = {
  name: { label: 'API user name' },
  password: { label: 'Password', secret: true },
  password2: { label: 'Repeat password', secret: true },
  allowed_ips: { label: 'Allowed IPs' },
  reseller: { label: 'Bound reseller' },
};
const PASSWORD_FORM: FormSpec = {
  password: { label: 'Password', secret: true },
  password2: { label: 'Repeat password', secret: true },
};
const ACCESS_FORM: FormSpec = { allowed_ips: { label: 'Allowed IPs', id: 'access-allowed_ips' } };

const COLUMNS = ['Name', 'Access', 'Allowed IPs', 'Bound reseller', 'Created', 'Last used'].map((label) => ({
  label,
}));

/** The page's own check of the two password fields. */
function passwordMismatch(request: FastifyRequest): Record<string, string> {
  return field(request, 'password') === field(request, 'password2')
    ? {}
    : { password2: 'The two passwords do not match.' };
}

/** The access fields: open, or restricted to at least one address. */
function accessOf(request: FastifyRequest): { ips: string[]; error: Record<string, string> } {
  if (field(request, 'access') !== 'restricted') return { ips: [], error: {} };
  const ips = allowedIpsOf(request);
  return {
    ips,
    error: ips.length > 0 ? {} : { allowed_ips: 'List at least one address or range, one a line.' },
  };
}

/** The refusals of a password the page would set, besides its own check that both match. */
function passwordErrors(request: FastifyRequest): ApiError[] {
  try {
    parsePassword('password', field(request, 'password'));
    return [];
  } catch (error) {
    if (error instanceof ApiError) return [error];
    throw error;
  }
}

export function registerApiManager(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;
  const { crypt } = portal.services;

  const list = listPage(portal, 'api-manager', CREATE_FORM, async () => ({
    title: 'Preferences › API Manager',
    nav: 'api',
    columns: COLUMNS,
    rows: (await listApiUsers(db)).map((user) => ({
      cells: [
        { text: user.name, href: `${BASE}/${encodeURIComponent(user.name)}` },
        user.access === 'open' ? 'Open Access' : 'Restricted',
        { text: user.allowedIps.join(', ') || '—', class: 'long' },
        user.reseller ?? '—',
        formatDate(user.createdAt),
        user.lastUsedAt ? formatDate(user.lastUsedAt) : 'never',
      ],
    })),
  }));

  const detail = async (
    reply: FastifyReply,
    session: PortalSession,
    name: string,
    refused: { password?: FormErrors; access?: FormErrors; values?: Record<string, string> } = {},
    status = 200,
  ) => {
    const user = await findApiUser(db, name);
    if (!user) return reply.redirect(BASE, 303);
    const access = refused.values ?? { access: user.access, allowed_ips: user.allowedIps.join('\n') };
    return portal.render(
      reply,
      'api-user',
      {
        title: `API user ${name}`,
        nav: 'api',
        csrf: session.csrf,
        user,
        passwordForm: formView(PASSWORD_FORM, {}, refused.password),
        accessForm: formView(ACCESS_FORM, access, refused.access),
      },
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
      const spec = {
        name: values.name,
        password: field(request, 'password'),
        allowedIps: access.ips,
        reseller: values.reseller.trim() || null,
      };
      // Every field's error at once: the page's own checks and all of the values' refusals.
      const own = { ...passwordMismatch(request), ...access.error };
      if (Object.keys(own).length > 0) {
        const errors = refusal(CREATE_FORM, await newApiUserErrors(db, spec), own);
        return list(reply, session, { values, errors }, 400);
      }
      try {
        await createApiUser(db, crypt, spec, actorOf(request));
      } catch (error) {
        const all = error instanceof ApiError ? await newApiUserErrors(db, spec) : [];
        const errors = refusal(CREATE_FORM, all.length > 0 ? all : error);
        return list(reply, session, { values, errors }, 400);
      }
      return portal.redirectWithNotice(reply, session, BASE, `API user ${values.name} created.`);
    }),
  );

  app.get(
    `${BASE}/:name`,
    route(async (request, reply, session) =>
      detail(reply, session, (request.params as { name: string }).name),
    ),
  );

  app.post(
    `${BASE}/:name/password`,
    route(async (request, reply, session) => {
      const { name } = request.params as { name: string };
      const own = passwordMismatch(request);
      if (Object.keys(own).length > 0) {
        const errors = refusal(PASSWORD_FORM, passwordErrors(request), own);
        return detail(reply, session, name, { password: errors }, 400);
      }
      try {
        await resetApiUserPassword(db, crypt, name, field(request, 'password'), actorOf(request));
      } catch (error) {
        return detail(reply, session, name, { password: refusal(PASSWORD_FORM, error) }, 400);
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
      if (Object.keys(access.error).length > 0) {
        return detail(reply, session, name, { values, access: refusal(ACCESS_FORM, [], access.error) }, 400);
      }
      try {
        await setApiUserAccess(db, name, access.ips, actorOf(request));
      } catch (error) {
        return detail(reply, session, name, { values, access: refusal(ACCESS_FORM, error) }, 400);
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
