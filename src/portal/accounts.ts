// Accounts: the list (search, state and owner filters, sorting, pages), an account's own page
// (record, usage, certificate and mail, its audit entries), and creating, suspending (with a
// reason), unsuspending and removing an account, each change confirmed first. Every change runs
// the API operation, as the administrator.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { summaryRecord } from '../operations/record.ts';
import {
  ACCOUNT_SORTS,
  type AccountQuery,
  type AccountSort,
  accountOwners,
  queryAccounts,
} from '../store/account-query.ts';
import { findAccount } from '../store/accounts.ts';
import { listAudit } from '../store/audit.ts';
import { backupStatuses } from '../store/backup-jobs.ts';
import { listPackages } from '../store/packages.ts';
import type { PortalSession } from '../store/portal-sessions.ts';
import { type FormSpec, formView, refusal } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import { auditTable } from './audit.ts';
import { field, notFound, type Portal, type WithSession } from './page.ts';

const PER_PAGE = 50;
const STATES = ['all', 'active', 'suspended'] as const;

/** The create form's fields, in the order createacct takes them. */
const CREATE_FORM: FormSpec = {
  user: { label: 'User name' },
  domain: { label: 'Domain' },
  email: { label: 'Contact e-mail' },
  package: { label: 'Package' },
  password: { label: 'Password', secret: true },
};
const REASON_FORM: FormSpec = { reason: { label: 'Reason' } };

/** The list's columns: the table kit's headings and the sorts they offer. */
export const ACCOUNT_COLUMNS = [
  { label: 'User', sort: 'user' },
  { label: 'Domain', sort: 'domain' },
  { label: 'Package', sort: 'package' },
  { label: 'Owner', sort: 'owner' },
  { label: 'Created', sort: 'setup' },
  { label: 'Disk usage', sort: 'disk' },
] as const satisfies readonly { label: string; sort: AccountSort }[];

/** The list's query string read leniently: anything it does not know falls back to the default. */
function listQuery(request: FastifyRequest): AccountQuery & { page: number } {
  const query = request.query as Record<string, string | undefined>;
  const pick = <T extends string>(value: string | undefined, allowed: readonly T[], fallback: T): T =>
    allowed.includes(value as T) ? (value as T) : fallback;
  const page = Number(query.page ?? '1');
  const valid = Number.isInteger(page) && page >= 1 ? page : 1;
  return {
    text: String(query.q ?? '').trim(),
    state: pick(query.state, STATES, 'all'),
    owner: String(query.owner ?? '').trim(),
    sort: pick<AccountSort>(query.sort, ACCOUNT_SORTS, 'user'),
    descending: query.dir === 'desc',
    page: valid,
    offset: (valid - 1) * PER_PAGE,
    limit: PER_PAGE,
  };
}

const accountPath = (user: string, action = '') =>
  `/accounts/${encodeURIComponent(user)}${action ? `/${action}` : ''}`;

export function registerAccountPages(app: FastifyInstance, portal: Portal, route: WithSession): void {
  const { db } = portal.services.store;
  const { driver } = portal.services;

  const list = async (request: FastifyRequest, reply: FastifyReply, session: PortalSession) => {
    const query = listQuery(request);
    let found = await queryAccounts(db, query);
    const pages = Math.max(1, Math.ceil(found.total / PER_PAGE));
    if (query.page > pages) {
      query.page = pages;
      query.offset = (pages - 1) * PER_PAGE;
      found = await queryAccounts(db, query);
    }
    /** This list's address with some of its settings changed. */
    const link = (change: Record<string, string | number>) => {
      const settings: Record<string, string | number> = {
        q: query.text,
        state: query.state === 'all' ? '' : query.state,
        owner: query.owner,
        sort: query.sort === 'user' ? '' : query.sort,
        dir: query.descending ? 'desc' : '',
        page: query.page === 1 ? '' : query.page,
        ...change,
      };
      const search = new URLSearchParams();
      for (const [key, value] of Object.entries(settings)) if (value !== '') search.set(key, String(value));
      const text = search.toString();
      return text ? `/accounts?${text}` : '/accounts';
    };
    const sortLink = (sort: AccountSort) =>
      link({
        sort: sort === 'user' ? '' : sort,
        dir: query.sort === sort && !query.descending ? 'desc' : '',
        page: '',
      });
    const certificates = driver.certificates
      ? new Map(driver.certificates(found.accounts).map((row) => [row.user, row]))
      : null;
    // Each account's last good backup and the failures since (CONTRACT §15), from the jobs.
    const backups = driver.backups ? await backupStatuses(db) : null;
    const columns = [
      ...ACCOUNT_COLUMNS,
      ...(certificates ? [{ label: 'Certificate' }] : []),
      ...(backups ? [{ label: 'Last backup' }] : []),
      { label: 'State' },
    ];
    return portal.render(reply, 'accounts', {
      title: 'Accounts',
      nav: 'accounts',
      csrf: session.csrf,
      query,
      accounts: found.accounts,
      total: found.total,
      pages,
      owners: await accountOwners(db),
      columns,
      sort: { current: query.sort, descending: query.descending, link: sortLink },
      rows: found.accounts.map((account) => ({
        id: `account-${account.user}`,
        cells: [
          {
            text: account.user,
            href: accountPath(account.user),
            after: account.reseller ? ' (reseller)' : '',
          },
          account.domain,
          account.package,
          account.owner,
          formatDate(account.setupAt),
          { class: 'usage', view: '/usage', data: { account } },
          ...(certificates
            ? [
                {
                  class: 'certificate',
                  view: '/certificate',
                  data: { c: certificates.get(account.user) ?? {}, date: formatDate },
                },
              ]
            : []),
          ...(backups
            ? [
                {
                  class: 'backup',
                  view: '/backup-status',
                  data: { b: backups.get(account.user) ?? null, date: formatDate },
                },
              ]
            : []),
          { view: '/account-state', data: { account } },
        ],
      })),
      previous: query.page > 1 ? link({ page: query.page - 1 === 1 ? '' : query.page - 1 }) : '',
      next: query.page < pages ? link({ page: query.page + 1 }) : '',
      notice: portal.takeNotice(request, reply, session),
    });
  };

  app.get('/accounts', route(list));

  const createForm = async (
    reply: FastifyReply,
    session: PortalSession,
    values: Record<string, string>,
    errors: Record<string, string> = {},
    status = 200,
  ) =>
    portal.render(
      reply,
      'account-new',
      {
        title: 'Create an account',
        nav: 'accounts',
        csrf: session.csrf,
        packages: (await listPackages(db)).map((pkg) => pkg.name),
        form: formView(CREATE_FORM, values, errors),
      },
      status,
    );

  app.get(
    '/new-account',
    route(async (_request, reply, session) => createForm(reply, session, { package: 'default' })),
  );

  app.post(
    '/new-account',
    route(async (request, reply, session) => {
      const params: Record<string, string> = {};
      for (const name of Object.keys(CREATE_FORM)) params[name] = field(request, name).trim();
      if (field(request, 'shell') === 'on') params.shell = 'on';
      try {
        await portal.run(request, 'createacct', params);
      } catch (error) {
        return createForm(reply, session, params, refusal(CREATE_FORM, error), 400);
      }
      return portal.redirectWithNotice(
        reply,
        session,
        accountPath(params.user!),
        `Account ${params.user} created.`,
      );
    }),
  );

  app.get(
    '/accounts/:user',
    route(async (request, reply, session) => {
      const { user } = request.params as { user: string };
      const account = await findAccount(db, user);
      if (!account) return notFound(reply, session, `No account named ${user} exists.`);
      return portal.render(reply, 'account', {
        title: `Account ${account.user}`,
        nav: 'accounts',
        csrf: session.csrf,
        account,
        record: summaryRecord(account, portal.services.fleet.hosting(account.server)),
        certificate: driver.certificates?.([account])[0] ?? null,
        backup: driver.backups ? ((await backupStatuses(db)).get(account.user) ?? null) : undefined,
        audit: auditTable(await listAudit(db, { target: account.user, limit: 50 }), false),
        notice: portal.takeNotice(request, reply, session),
      });
    }),
  );

  /** A change to one account: a page that asks (and, for suspend, for a reason), then the call. */
  const change = (
    action: 'suspend' | 'unsuspend' | 'remove',
    operation: string,
    done: string,
    question: (user: string) => string,
    button: string,
  ) => {
    const ask = (
      reply: FastifyReply,
      session: PortalSession,
      user: string,
      values: Record<string, string> = {},
      errors: Record<string, string> = {},
      status = 200,
    ) =>
      portal.render(
        reply,
        'confirm',
        {
          title: `${button} ${user}?`,
          nav: 'accounts',
          csrf: session.csrf,
          question: question(user),
          action: accountPath(user, action),
          button: `${button} ${user}`,
          back: accountPath(user),
          reason: action === 'suspend',
          form: formView(REASON_FORM, values, errors),
        },
        status,
      );

    app.get(
      `/accounts/:user/${action}`,
      route(async (request, reply, session) => {
        const { user } = request.params as { user: string };
        const account = await findAccount(db, user);
        if (!account) return notFound(reply, session, `No account named ${user} exists.`);
        return ask(reply, session, account.user);
      }),
    );

    app.post(
      `/accounts/:user/${action}`,
      route(async (request, reply, session) => {
        const { user } = request.params as { user: string };
        const params: Record<string, string> = { user };
        if (action === 'suspend') {
          params.reason = field(request, 'reason').trim();
          if (params.reason === '') {
            const errors = { reason: 'Give a reason: listsuspended and the account page show it.' };
            return ask(reply, session, user, params, errors, 400);
          }
        }
        try {
          await portal.run(request, operation, params);
        } catch (error) {
          // The page has one field, the reason; anything else is about the account itself.
          return ask(reply, session, user, params, refusal(REASON_FORM, error), 400);
        }
        const to = action === 'remove' ? '/accounts' : accountPath(user);
        return portal.redirectWithNotice(reply, session, to, `Account ${user} ${done}.`);
      }),
    );
  };

  change(
    'suspend',
    'suspendacct',
    'suspended',
    (user) => `Suspend ${user}? Its site, mail and shell stop until it is unsuspended.`,
    'Suspend',
  );
  change(
    'unsuspend',
    'unsuspendacct',
    'unsuspended',
    (user) => `Unsuspend ${user}? Its site, mail and shell work again.`,
    'Unsuspend',
  );
  change(
    'remove',
    'removeacct',
    'removed',
    (user) =>
      `Remove ${user} for good? Its files, site, mail, zone and certificate are deleted; this cannot be undone.`,
    'Remove',
  );
}
