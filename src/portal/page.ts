// What every page of the portal is given and shares: the Portal its handlers act through, the
// session wrapper's type, form fields, the administrator as the audit log shows it, and how a page
// is rendered. portal.ts builds these and registers the pages; the pages import only this file.
import { join } from 'node:path';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import type { Actor } from '../operations/audited.ts';
import type { RawParams, Result } from '../operations/operation.ts';
import type { Services } from '../services.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { type FormErrors, type FormSpec, type FormView, formView, summaryOf } from './kit/form.ts';
import { formatDate } from './kit/format.ts';

const HERE = import.meta.dirname;
/** The portal's one user; no API account may have this name (values.ts). */
export const PORTAL_USER = 'root';

/** What every page handler gets: the services, the session, and how to render and act. */
export interface Portal {
  services: Services;
  render(reply: FastifyReply, view: string, data: Record<string, unknown>, status?: number): FastifyReply;
  /** Runs an API operation as the administrator, through the same `execute` as the API. */
  run(request: FastifyRequest, operation: string, params: Record<string, string>): Promise<Result>;
  /** Redirects (303) to a page that shows `notice` once, carried in the session's signed cookie. */
  redirectWithNotice(reply: FastifyReply, session: PortalSession, to: string, notice: string): FastifyReply;
  /** The notice a redirect left for this page (shown once: the cookie is cleared), or ''. */
  takeNotice(request: FastifyRequest, reply: FastifyReply, session: PortalSession): string;
}

export type SessionHandler = (
  request: FastifyRequest,
  reply: FastifyReply,
  session: PortalSession,
) => Promise<unknown>;
export type WithSession = (
  handler: SessionHandler,
) => (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The first value of a form field, or ''. */
export function field(request: FastifyRequest, name: string): string {
  const body = request.body instanceof Map ? (request.body as RawParams) : new Map();
  const value = body.get(name)?.[0];
  return typeof value === 'string' ? value : '';
}

/** The portal's administrator, at the client's address, as the audit log shows it. */
export function actorOf(request: FastifyRequest): Actor {
  return { kind: 'admin', via: 'portal', apiAccount: null, address: clientAddress(request) };
}

const views = new Eta({ views: join(HERE, 'views'), autoEscape: true, cache: true });

/** Every form a page shows (each FormView passed to render) takes part in its error summary. */
const isFormView = (value: unknown): value is FormView =>
  typeof value === 'object' && value !== null && 'spec' in value && 'errors' in value && 'values' in value;

export function renderPage(reply: FastifyReply, view: string, data: Record<string, unknown>, status = 200) {
  const forms = Object.values(data).filter(isFormView);
  const summary = summaryOf(forms, (data.errors ?? {}) as FormErrors);
  const page = { nav: '', errors: {}, values: {}, notice: '', date: formatDate, ...data, summary };
  const html = views.render(view, page);
  return reply.code(status).type('text/html; charset=utf-8').send(html);
}

/** The portal's page for an address it does not have, or a thing that does not exist. */
export function notFound(reply: FastifyReply, session: PortalSession | null, message: string) {
  const data = { title: 'Not found', message, csrf: session?.csrf ?? '', nav: session ? 'none' : '' };
  return renderPage(reply, 'error', data, 404);
}

/** What a list page shows besides its rows: the notice a change left, or its refused form. */
export interface ListState {
  notice?: string;
  values?: Record<string, string>;
  errors?: FormErrors;
}

/**
 * A list page with its create form `spec` below the rows: `content` gives its title, columns, rows
 * and the rest of what `view` shows, read afresh each time it is shown.
 */
export function listPage(
  portal: Portal,
  view: string,
  spec: FormSpec,
  content: () => Promise<Record<string, unknown>>,
) {
  return async (reply: FastifyReply, session: PortalSession, state: ListState, status = 200) =>
    portal.render(
      reply,
      view,
      {
        csrf: session.csrf,
        notice: state.notice ?? '',
        form: formView(spec, state.values, state.errors),
        ...(await content()),
      },
      status,
    );
}
