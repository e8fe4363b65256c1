// How every page of the portal and of the holder's panel is drawn: auto-escaping templates from
// the surface's own views, in which `/kit/<name>` is the shared kit (views/ beside this file:
// field, summary, table, sort); every form the page is given takes part in its error summary; the
// answer carries the pages' security headers (no script, nothing from another host, no framing).
import { join } from 'node:path';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RawParams } from '../operations/operation.ts';
import { type FormErrors, type FormView, summaryOf } from './form.ts';

const KIT_VIEWS = join(import.meta.dirname, 'views');
/** The shared stylesheet, served by each surface at /static/kit.css. */
export const KIT_STYLESHEET = join(import.meta.dirname, 'static', 'kit.css');

export const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** Eta over a surface's views, where `/kit/<name>` names a template of the shared kit. */
function kitEta(views: string): Eta {
  const eta = new Eta({ views, autoEscape: true, cache: true });
  const own = eta.resolvePath!;
  eta.resolvePath = function (template, options) {
    const kit = /^\/kit\/([a-z-]+)$/.exec(template);
    return kit ? join(KIT_VIEWS, `${kit[1]}.eta`) : own.call(this, template, options);
  };
  return eta;
}

/** Every form a page shows (each FormView passed to render) takes part in its error summary. */
const isFormView = (value: unknown): value is FormView =>
  typeof value === 'object' && value !== null && 'spec' in value && 'errors' in value && 'values' in value;

export type Render = (
  reply: FastifyReply,
  view: string,
  data: Record<string, unknown>,
  status?: number,
) => FastifyReply;

/** Renders the views of `views`, each page given `defaults` under what it is given itself. */
export function pageRenderer(views: string, defaults: Record<string, unknown>): Render {
  const eta = kitEta(views);
  return (reply, view, data, status = 200) => {
    const forms = Object.values(data).filter(isFormView);
    const summary = summaryOf(forms, (data.errors ?? {}) as FormErrors);
    const page = { errors: {}, values: {}, notice: '', ...defaults, ...data, summary };
    const html = eta.render(view, page);
    return reply.code(status).type('text/html; charset=utf-8').send(html);
  };
}

/** The first value of a form field, or ''. */
export function field(request: FastifyRequest, name: string): string {
  const body = request.body instanceof Map ? (request.body as RawParams) : new Map();
  const value = body.get(name)?.[0];
  return typeof value === 'string' ? value : '';
}
