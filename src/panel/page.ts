// What every page of the holder's panel is given and shares: the holder (session, account read
// afresh, language), how a page is drawn for it, how it runs an operation as the holder through
// the one pipeline, and the panel's navigation. panel.ts builds these and registers the pages;
// the pages import only this file and the kit.
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PanelPage } from '../operations/create-user-session.ts';
import type { Result } from '../operations/operation.ts';
import type { Services } from '../services.ts';
import type { Account } from '../store/accounts.ts';
import type { HolderSession } from '../store/holder-sessions.ts';
import { formatDate } from '../web-kit/format.ts';
import { pageRenderer } from '../web-kit/render.ts';
import type { Language, Translate } from './i18n.ts';

export { field } from '../web-kit/render.ts';

/** The logged-in holder a page serves: its session, its account as it is now, its language. */
export interface Holder {
  session: HolderSession;
  account: Account;
  language: Language;
  t: Translate;
}

export interface Panel {
  services: Services;
  /** Draws `view` for the holder: its language, theme, name and main domain, the navigation. */
  render(
    reply: FastifyReply,
    holder: Holder,
    view: string,
    data: Record<string, unknown>,
    status?: number,
  ): FastifyReply;
  /**
   * Runs a customer operation as the holder (principal kind `holder`, via the session's `panel` or
   * `sso`), through the same `execute` as the customer API. A call refused for its parameters
   * throws Refused with every parameter's refusal; any other refusal, its ApiError.
   */
  run(
    request: FastifyRequest,
    holder: Holder,
    operation: string,
    params: Record<string, string>,
  ): Promise<Result>;
  /** Redirects (303) to a page that shows `notice` once, carried in the session's signed cookie. */
  redirectWithNotice(reply: FastifyReply, holder: Holder, to: string, notice: string): FastifyReply;
  /** The notice a redirect left for this page (shown once: the cookie is cleared), or ''. */
  takeNotice(request: FastifyRequest, reply: FastifyReply, holder: Holder): string;
}

export type HolderHandler = (
  request: FastifyRequest,
  reply: FastifyReply,
  holder: Holder,
) => Promise<unknown>;
export type WithHolder = (
  handler: HolderHandler,
) => (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

/** The panel's pages in the navigation's order (CONTRACT §14), with the address of each. */
export const PANEL_NAVIGATION: readonly { page: PanelPage; path: string }[] = [
  { page: 'home', path: '/' },
  { page: 'domains', path: '/domains' },
  { page: 'email', path: '/email' },
  { page: 'databases', path: '/databases' },
  { page: 'ftp', path: '/ftp' },
  { page: 'cron', path: '/cron' },
  { page: 'backups', path: '/backups' },
  { page: 'security', path: '/security' },
];

/** Where a page of the panel is: its address, or Home for a name the panel does not know. */
export function pathOfPage(page: string): string {
  return PANEL_NAVIGATION.find((entry) => entry.page === page)?.path ?? '/';
}

/** The panel's theme for an account's `theme`: `dark`, or `default` (the browser's preference). */
export function themeOf(theme: string): 'dark' | 'default' {
  return theme === 'dark' ? 'dark' : 'default';
}

/** Draws a page of the panel's views (the shared kit's included). */
export const renderPanelPage = pageRenderer(join(import.meta.dirname, 'views'), {
  nav: '',
  date: formatDate,
  navigation: PANEL_NAVIGATION,
});
