// Email: the account's mailboxes (list_mailboxes, add_mailbox, remove_mailbox; a mailbox's own page
// changes its password and quota: mailbox.ts), its forwarders (list_forwarders, add_forwarder,
// remove_forwarder), its mailing lists (list_mailing_lists, add_mailing_list, remove_mailing_list;
// a list's own page adds and removes its members: mailing-list.ts) and a link to webmail, where a
// mailbox logs in with its address and password. The page is a list of sections, each with its own
// list operation, add form and removal.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { quotaText, registerMailboxPage } from './mailbox.ts';
import { type MailingList, registerMailingListPage } from './mailing-list.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

export const mailboxForm = (t: Translate): FormSpec => ({
  email: { label: t('email.address') },
  password: { label: t('email.password'), secret: true },
  quota: { label: t('email.quota') },
});
const forwarderForm = (t: Translate): FormSpec => ({
  email: { label: t('email.forwarderAddress'), id: 'forwarder-email' },
  to: { label: t('email.forwardTo'), id: 'forwarder-to' },
});
const listForm = (t: Translate): FormSpec => ({
  email: { label: t('email.listAddress'), id: 'list-email' },
  owner: { label: t('email.listOwner'), id: 'list-owner' },
});

interface Mailbox {
  email: string;
  quota: string;
  created: string;
}
interface Forwarder {
  email: string;
  to: string[];
  created: string;
}
interface Limit {
  used: number;
  limit: string;
}

/** A refused form of the page: what was typed and the errors, by the section it belongs to. */
interface State {
  notice?: string;
  mailbox?: { values?: Record<string, string>; errors?: FormErrors };
  forwarder?: { values?: Record<string, string>; errors?: FormErrors };
  list?: { values?: Record<string, string>; errors?: FormErrors };
  errors?: FormErrors;
}

/**
 * Where webmail is for the holder's account: on its server (by the host name single sign-on URLs
 * use), at the webmail port, when servers run webmail (the linux driver with its webmail
 * component) and the account's mail is Berth's.
 */
function webmailUrl(panel: Panel, holder: Holder): string | null {
  const { config, fleet } = panel.services;
  const served = config.driver === 'linux' && config.linux.components.includes('webmail');
  if (!served || holder.account.mailserver !== 'local') return null;
  return `https://${fleet.hosting(holder.account.server).hostName}:${config.linux.webmailPort}/`;
}

export function registerEmailPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const csrf = holder.session.csrf;
    // One list operation per section, in the page's order.
    const [mailboxes, forwarders, lists, info] = await Promise.all([
      panel.run(request, holder, 'list_mailboxes', {}),
      panel.run(request, holder, 'list_forwarders', {}),
      panel.run(request, holder, 'list_mailing_lists', {}),
      panel.run(request, holder, 'account_info', {}),
    ]);
    const limits = (info.data as { limits: Record<string, Limit> }).limits;
    const inUse = (limit: Limit, key: string) =>
      limit.limit === 'unlimited'
        ? t(`email.${key}Unlimited`, { used: limit.used })
        : t(`email.${key}`, { used: limit.used, limit: limit.limit });
    const mailboxRows = (mailboxes.data as Mailbox[]).map((m) => ({
      cells: [
        m.email,
        quotaText(t, m.quota),
        formatDate(m.created),
        { view: '/mailbox-actions', data: { email: m.email, csrf, t } },
      ],
    }));
    const forwarderRows = (forwarders.data as Forwarder[]).map((f) => ({
      cells: [
        f.email,
        f.to.join(', '),
        formatDate(f.created),
        {
          view: '/remove-row',
          data: {
            action: '/email/forwarders/remove',
            name: 'email',
            value: f.email,
            text: t('email.remove'),
            csrf,
          },
        },
      ],
    }));
    const listRows = (lists.data as MailingList[]).map((l) => ({
      cells: [
        l.email,
        l.owner,
        String(l.members.length),
        { view: '/list-actions', data: { email: l.email, csrf, t } },
      ],
    }));
    const columns = (names: string[]) => names.map((c) => ({ label: t(`email.columns.${c}`) }));
    return panel.render(
      reply,
      holder,
      'email',
      {
        nav: 'email',
        title: t('email.title'),
        notice: state.notice ?? '',
        errors: state.errors ?? {},
        webmail: webmailUrl(panel, holder),
        mailboxes: {
          columns: columns(['address', 'quota', 'created', 'actions']),
          rows: mailboxRows,
          inUse: inUse(limits.email!, 'inUse'),
        },
        mailboxForm: formView(mailboxForm(t), state.mailbox?.values, state.mailbox?.errors),
        forwarders: { columns: columns(['address', 'to', 'created', 'actions']), rows: forwarderRows },
        forwarderForm: formView(forwarderForm(t), state.forwarder?.values, state.forwarder?.errors),
        lists: {
          columns: columns(['address', 'owner', 'members', 'actions']),
          rows: listRows,
          inUse: inUse(limits.maillist!, 'listsInUse'),
        },
        listForm: formView(listForm(t), state.list?.values, state.list?.errors),
      },
      status,
    );
  };

  /** The account's limit of `kind` as account_info words it, for a refusal at the limit. */
  const limitOf = async (request: FastifyRequest, holder: Holder, kind: string) => {
    const info = await panel.run(request, holder, 'account_info', {});
    return (info.data as { limits: Record<string, Limit> }).limits[kind]?.limit ?? '0';
  };

  /** Runs an operation of a section's form: on success back to the page with `notice`, else the page refused. */
  const act = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    operation: string,
    params: Record<string, string>,
    notice: string,
    refused: (error: ApiError) => Promise<State>,
  ) => {
    try {
      await panel.run(request, holder, operation, params);
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return show(request, reply, holder, await refused(error), error.status);
    }
    return panel.redirectWithNotice(reply, holder, '/email', notice);
  };

  app.get(
    '/email',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/email/mailboxes',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = {
        email: field(request, 'email').trim().toLowerCase(),
        password: field(request, 'password'),
        quota: field(request, 'quota').trim(),
      };
      const { quota, ...rest } = values;
      return act(
        request,
        reply,
        holder,
        'add_mailbox',
        quota === '' ? rest : values,
        t('email.mailboxAdded', { email: values.email }),
        async (error) => {
          const limit = await limitOf(request, holder, 'email');
          const errors = refusalIn(
            t,
            mailboxForm(t),
            error,
            {},
            { limit_reached: { field: 'email', message: t('email.limitReached', { limit }) } },
          );
          return { mailbox: { values, errors } };
        },
      );
    }),
  );

  app.post(
    '/email/mailboxes/remove',
    withHolder(async (request, reply, holder) => {
      const email = field(request, 'email');
      return act(
        request,
        reply,
        holder,
        'remove_mailbox',
        { email },
        holder.t('email.mailboxRemoved', { email }),
        async (error) => ({ errors: { form: rowRefusal(holder.t, error) } }),
      );
    }),
  );

  app.post(
    '/email/forwarders',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = { email: field(request, 'email').trim().toLowerCase(), to: field(request, 'to').trim() };
      return act(
        request,
        reply,
        holder,
        'add_forwarder',
        values,
        t('email.forwarderAdded', { email: values.email }),
        async (error) => ({ forwarder: { values, errors: refusalIn(t, forwarderForm(t), error) } }),
      );
    }),
  );

  app.post(
    '/email/forwarders/remove',
    withHolder(async (request, reply, holder) => {
      const email = field(request, 'email');
      return act(
        request,
        reply,
        holder,
        'remove_forwarder',
        { email },
        holder.t('email.forwarderRemoved', { email }),
        async (error) => ({ errors: { form: rowRefusal(holder.t, error) } }),
      );
    }),
  );

  app.post(
    '/email/lists',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = {
        email: field(request, 'email').trim().toLowerCase(),
        owner: field(request, 'owner').trim(),
      };
      return act(
        request,
        reply,
        holder,
        'add_mailing_list',
        values,
        t('email.listAdded', { email: values.email }),
        async (error) => {
          const limit = await limitOf(request, holder, 'maillist');
          const errors = refusalIn(
            t,
            listForm(t),
            error,
            {},
            { limit_reached: { field: 'email', message: t('email.listsLimitReached', { limit }) } },
          );
          return { list: { values, errors } };
        },
      );
    }),
  );

  app.post(
    '/email/lists/remove',
    withHolder(async (request, reply, holder) => {
      const email = field(request, 'email');
      return act(
        request,
        reply,
        holder,
        'remove_mailing_list',
        { email },
        holder.t('email.listRemoved', { email }),
        async (error) => ({ errors: { form: rowRefusal(holder.t, error) } }),
      );
    }),
  );

  registerMailboxPage(app, panel, withHolder);
  registerMailingListPage(app, panel, withHolder);
}

/** Why a row's button was refused (an address that is gone meanwhile), above the page. */
export function rowRefusal(t: Translate, error: ApiError): string {
  const errors = refusalIn(t, { email: { label: t('email.address'), id: 'row-email' } }, error);
  return errors.form ?? errors.email ?? error.message;
}
