// What every page of the portal is given and shares: the Portal its handlers act through, the
// session wrapper's type, form fields, the administrator as the audit log shows it, and how a page
// is rendered. portal.ts builds these and registers the pages; the pages import only this file.
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import type { Actor } from '../operations/audited.ts';
import type { Result } from '../operations/operation.ts';
import type { Services } from '../services.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import { pageRenderer } from '../web-kit/render.ts';

export { field } from '../web-kit/render.ts';

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

/** The portal's administrator, at the client's address, as the audit log shows it. */
export function actorOf(request: FastifyRequest): Actor {
  return { kind: 'admin', via: 'portal', apiAccount: null, address: clientAddress(request) };
}

/** Draws a page of the portal's views (the shared kit's included). */
export const renderPage = pageRenderer(join(HERE, 'views'), { nav: '', date: formatDate });

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
