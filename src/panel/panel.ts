// The account holder's panel (CONTRACT §14) at / of the customer listener: a holder logs in with
// the account's user name and password, or by a single sign-on URL, and works on the account
// through the customer operations, run by the one pipeline as the holder. Built from the portal's
// kit (web-kit/): server-rendered, auto-escaping, no script; the portal's CSP, CSRF and cookie
// rules under cookie names of its own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import { authenticateHolder } from '../auth/holders.ts';
import { ApiError, apiError } from '../core/errors.ts';
import { execute } from '../operations/execute.ts';
import { paramErrors, type RawParams } from '../operations/operation.ts';
import type { Holder as HolderPrincipal } from '../operations/principal.ts';
import { customerOperations } from '../operations/registry.ts';
import type { Services } from '../services.ts';
import { type Account, findAccount } from '../store/accounts.ts';
import { takeSsoToken } from '../store/sso-tokens.ts';
import { type FormErrors, formView } from '../web-kit/form.ts';
import { KIT_STYLESHEET, SECURITY_HEADERS } from '../web-kit/render.ts';
import {
  cookie,
  noticeCookie,
  noticeOf,
  parseCookies,
  randomToken,
  tokensMatch,
} from '../web-kit/session.ts';
import { registerBackupsPage } from './backups.ts';
import { registerCronPage } from './cron.ts';
import { registerDatabasesPage } from './databases.ts';
import { registerDomainsPage } from './domains.ts';
import { registerEmailPage } from './email.ts';
import { registerFtpPage } from './ftp.ts';
import { registerHomePage } from './home.ts';
import { languageOf, type Translate, translator } from './i18n.ts';
import {
  field,
  type Holder,
  type Panel,
  pathOfPage,
  renderPanelPage,
  themeOf,
  type WithHolder,
} from './page.ts';
import { Refused } from './refusal.ts';
import { registerSecurityPage } from './security.ts';
import { closeHolderSession, currentHolding, openHolderSession, PANEL_COOKIES } from './session.ts';

const STYLESHEETS = {
  '/static/kit.css': readFileSync(KIT_STYLESHEET),
  '/static/panel.css': readFileSync(join(import.meta.dirname, 'static', 'panel.css')),
};
/** Before login the panel knows no account, so it speaks English (its labels are the contract's). */
const LOGIN_LANGUAGE = 'en';
const loginT = translator(LOGIN_LANGUAGE);
const loginForm = (t: Translate) => ({
  username: { label: t('login.username') },
  password: { label: t('login.password'), secret: true },
});

/** The customer listener's answer for an address outside /api that the panel does not have. */
export function panelNotFound(services: Services) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const holding = await currentHolding(
      services.store.db,
      parseCookies(request.headers.cookie).get(PANEL_COOKIES.session),
      Date.now(),
    );
    reply.headers(SECURITY_HEADERS);
    const path = request.url.split('?')[0]!;
    if (holding.state !== 'active') {
      const t = loginT;
      return renderPanelPage(
        reply,
        'error',
        {
          t,
          lang: LOGIN_LANGUAGE,
          theme: 'default',
          title: t('notFound.title'),
          message: t('notFound.message', { path }),
        },
        404,
      );
    }
    const holder = holderOf(holding.session, holding.account);
    return renderFor(
      reply,
      holder,
      'error',
      { title: holder.t('notFound.title'), message: holder.t('notFound.message', { path }) },
      404,
    );
  };
}

function holderOf(session: Holder['session'], account: Account): Holder {
  const language = languageOf(account.language);
  return { session, account, language, t: translator(language) };
}

function renderFor(
  reply: FastifyReply,
  holder: Holder,
  view: string,
  data: Record<string, unknown>,
  status = 200,
) {
  const { account, t } = holder;
  return renderPanelPage(
    reply,
    view,
    {
      t,
      lang: holder.language,
      theme: themeOf(account.theme),
      account: { user: account.user, domain: account.domain },
      csrf: holder.session.csrf,
      nav: data.nav ?? 'none',
      ...data,
    },
    status,
  );
}

export function registerPanel(app: FastifyInstance, services: Services, options: { secure: boolean }): void {
  const { db } = services.store;
  const { secure } = options;
  const names = PANEL_COOKIES;

  app.addHook('onSend', async (_request, reply) => {
    reply.headers(SECURITY_HEADERS);
  });

  const panel: Panel = {
    services,
    render: renderFor,
    async run(request, holder, name, params) {
      const operation = customerOperations.find(name);
      if (!operation) throw apiError('unknown_operation', { path: `/api/${name}/` });
      const address = clientAddress(request);
      const principal: HolderPrincipal = {
        kind: 'holder',
        via: holder.session.via,
        account: holder.account,
        credential: holder.session.idHash,
        address,
      };
      // An empty field is a parameter not given, as an API caller leaves it out.
      const given = Object.entries(params).filter(([, value]) => value !== '');
      const raw: RawParams = new Map(given.map(([key, value]) => [key, [value]]));
      try {
        return await execute(services, {
          operation,
          params: raw,
          address,
          claimedUser: holder.account.user,
          identify: async () => principal,
        });
      } catch (error) {
        // The call stops at its first bad parameter (and is audited so); the form shows them all.
        if (!(error instanceof ApiError) || error.param === undefined) throw error;
        const all = paramErrors(operation.params, raw, services.config);
        const [first, ...rest] = all;
        throw new Refused(first ? [first, ...rest] : [error]);
      }
    },
    redirectWithNotice(reply, holder, to, notice) {
      reply.header('set-cookie', noticeCookie(names.notice, holder.session, notice, secure));
      return reply.redirect(to, 303);
    },
    takeNotice(request, reply, holder) {
      if (!parseCookies(request.headers.cookie).has(names.notice)) return '';
      reply.header('set-cookie', cookie(names.notice, '', { secure, maxAgeSeconds: 0 }));
      return noticeOf(names.notice, request.headers.cookie, holder.session);
    },
  };

  const showLogin = (
    reply: FastifyReply,
    data: { values?: Record<string, string>; errors?: FormErrors; notice?: string },
    status = 200,
  ) => {
    const token = randomToken();
    reply.header('set-cookie', [
      cookie(names.login, token, { secure, maxAgeSeconds: 3600 }),
      cookie(names.session, '', { secure, maxAgeSeconds: 0 }),
    ]);
    const t = loginT;
    const form = formView(loginForm(t), data.values, data.errors);
    return renderPanelPage(
      reply,
      'login',
      {
        t,
        lang: LOGIN_LANGUAGE,
        theme: 'default',
        title: t('login.title'),
        csrf: token,
        form,
        notice: data.notice ?? '',
      },
      status,
    );
  };

  /** Wraps a handler that needs a holder at work (and, for POST, the session's CSRF token). */
  const withHolder: WithHolder = (handler) => async (request, reply) => {
    const id = parseCookies(request.headers.cookie).get(names.session);
    const holding = await currentHolding(db, id, Date.now());
    if (holding.state === 'suspended')
      return showLogin(reply, { errors: { form: loginT('login.suspended') } }, 403);
    if (holding.state === 'none') return reply.redirect('/login', 303);
    const holder = holderOf(holding.session, holding.account);
    if (request.method === 'POST' && !tokensMatch(field(request, '_csrf'), holding.session.csrf)) {
      const { t } = holder;
      return renderFor(
        reply,
        holder,
        'error',
        { title: t('refused.title'), message: t('refused.csrf') },
        403,
      );
    }
    return handler(request, reply, holder);
  };

  for (const [path, sheet] of Object.entries(STYLESHEETS)) {
    app.get(path, async (_request, reply) =>
      reply.type('text/css; charset=utf-8').header('cache-control', 'max-age=3600').send(sheet),
    );
  }

  app.get('/login', async (request, reply) => {
    const holding = await currentHolding(
      db,
      parseCookies(request.headers.cookie).get(names.session),
      Date.now(),
    );
    return holding.state === 'active' ? reply.redirect('/', 303) : showLogin(reply, {});
  });

  app.post('/login', async (request, reply) => {
    const username = field(request, 'username');
    const t = loginT;
    if (!tokensMatch(field(request, '_csrf'), parseCookies(request.headers.cookie).get(names.login)))
      return showLogin(reply, { values: { username }, errors: { form: t('login.expired') } }, 403);
    let account: Account;
    try {
      account = await authenticateHolder(
        services,
        username,
        field(request, 'password'),
        clientAddress(request),
      );
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      reply.headers(error.headers);
      const message =
        error.code === 'account_suspended'
          ? t('login.suspended')
          : error.code === 'forbidden'
            ? t('login.wrong')
            : error.message;
      return showLogin(reply, { values: { username }, errors: { form: message } }, error.status);
    }
    const { id } = await openHolderSession(db, account, 'panel', Date.now());
    reply.header('set-cookie', [
      cookie(names.session, id, { secure }),
      cookie(names.login, '', { secure, maxAgeSeconds: 0 }),
    ]);
    return reply.redirect('/', 303);
  });

  // Single sign-on (create_user_session): the token lets a browser in once, within its time.
  app.get('/login/sso', async (request, reply) => {
    const token = (request.query as Record<string, unknown>).token;
    const taken = typeof token === 'string' ? await takeSsoToken(db, token, services.now()) : null;
    const account = taken ? await findAccount(db, taken.user) : undefined;
    if (!taken || !account) return showLogin(reply, { errors: { form: loginT('login.sso') } }, 403);
    if (account.suspension !== null)
      return showLogin(reply, { errors: { form: loginT('login.suspended') } }, 403);
    const { id, session } = await openHolderSession(db, account, 'sso', Date.now());
    reply.header('set-cookie', cookie(names.session, id, { secure }));
    // Billing's site sent the browser here: along a redirect that began there, the browser would
    // not send the new session's SameSite=Strict cookie. The page asked for is opened from this
    // one instead, a navigation of this site's own.
    const holder = holderOf(session, account);
    const to = pathOfPage(taken.page);
    return renderFor(reply, holder, 'continue', { title: holder.t('login.continueTitle'), to });
  });

  app.post(
    '/logout',
    withHolder(async (request, reply) => {
      await closeHolderSession(db, parseCookies(request.headers.cookie).get(names.session));
      reply.header('set-cookie', cookie(names.session, '', { secure, maxAgeSeconds: 0 }));
      return reply.redirect('/login', 303);
    }),
  );

  registerHomePage(app, panel, withHolder);
  registerDomainsPage(app, panel, withHolder);
  registerEmailPage(app, panel, withHolder);
  registerCronPage(app, panel, withHolder);
  registerDatabasesPage(app, panel, withHolder);
  registerFtpPage(app, panel, withHolder, {
    host: services.config.hostName,
    port: services.config.linux.ftpPort,
  });
  registerBackupsPage(app, panel, withHolder);
  registerSecurityPage(app, panel, withHolder);
}
