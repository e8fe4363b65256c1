// create_user_session (CONTRACT §14): single sign-on from billing. The administrator or a reseller
// asks for a URL that logs a browser into an account's panel, once, within two minutes, on the page
// asked for: what a billing system's "Log in to control panel" button opens.
//
// The URL names this server (host_name and the customer listener's port): every server of a fleet
// serves every account's panel, and the token is in the store they share, so the server billing
// called is as good as the account's own. The token is in the answer only: the store keeps its hash,
// and the answer is never kept for an Idempotency-Key's replay (secretAnswer), so a retry gets a
// fresh URL while the first one's token expires unused.
import { apiError, invalid } from '../core/errors.ts';
import { issueSsoToken, SSO_TOKEN_SECONDS } from '../store/sso-tokens.ts';
import { changeState, targetAccount } from './common.ts';
import { defineOperation, kinds, optional, required, type ValueKind } from './operation.ts';
import { results } from './results.ts';

/** The pages of the panel a single sign-on URL may open (CONTRACT §14). */
export const PANEL_PAGES = [
  'home',
  'domains',
  'email',
  'databases',
  'ftp',
  'cron',
  'backups',
  'security',
] as const;
export type PanelPage = (typeof PANEL_PAGES)[number];

const panelPage: ValueKind<PanelPage> = {
  type: PANEL_PAGES.join('|'),
  rule: `one of ${PANEL_PAGES.join(', ')}`,
  schema: { type: 'string', enum: [...PANEL_PAGES] },
  parse(param, raw) {
    const page = PANEL_PAGES.find((name) => name === raw);
    if (!page) throw invalid(param, `it must be one of ${PANEL_PAGES.join(', ')}`);
    return page;
  },
};

export const createUserSession = defineOperation({
  name: 'create_user_session',
  summary:
    "A URL that logs a browser into an account's control panel once, within 120 seconds, on the page asked for.",
  changesState: true,
  secretAnswer: true,
  audiences: ['admin', 'reseller'],
  params: {
    user: required(kinds.user, 'Account user name'),
    page: optional(panelPage, 'The panel page the URL opens; home when omitted'),
  },
  example: { user: 'alice', page: 'domains' },
  result: results.userSession,
  errors: ['account_not_found', 'account_suspended'],
  async run(ctx, input) {
    const { config } = ctx.services;
    const now = ctx.services.now();
    const expires = new Date(now.getTime() + SSO_TOKEN_SECONDS * 1000);
    const page = input.page ?? 'home';
    const { user, token } = await changeState(ctx, async (db) => {
      const account = await targetAccount(db, ctx.principal, input.user);
      if (account.suspension) throw apiError('account_suspended', { user: account.user });
      return {
        user: account.user,
        token: await issueSsoToken(db, { user: account.user, page, expires }, now),
      };
    });
    const url = `https://${config.hostName}:${config.customerPort}/login/sso?token=${token}`;
    return {
      data: { url, expires: Math.floor(expires.getTime() / 1000) },
      info: `Single sign-on URL for ${user}, valid for ${SSO_TOKEN_SECONDS} seconds`,
    };
  },
});
