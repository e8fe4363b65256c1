// One mailing list of the Email page: the members the holder added (list_mailing_lists), one more
// added (add_list_member) or one removed (remove_list_member). Its address comes in the query (the
// page) or the form (a change); a list the account does not have is the panel's page for an
// address it does not have.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

/** A mailing list as list_mailing_lists answers it. */
export interface MailingList {
  email: string;
  owner: string;
  members: string[];
  created: string;
}

const memberForm = (t: Translate): FormSpec => ({
  email: { label: t('mailingList.member'), id: 'member-email' },
});

interface State {
  notice?: string;
  member?: { values: Record<string, string>; errors: FormErrors };
  errors?: FormErrors;
}

/** The page of a mailing list: `/email/list?email=<address>`. */
export const mailingListPath = (email: string) => `/email/list?${new URLSearchParams({ email })}`;

/** `<list>+<command>@<domain>`: where mlmmj takes a command for the list at `email`. */
const commandAddress = (email: string, command: string) => {
  const at = email.lastIndexOf('@');
  return `${email.slice(0, at)}+${command}${email.slice(at)}`;
};

export function registerMailingListPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    email: string,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const csrf = holder.session.csrf;
    const lists = await panel.run(request, holder, 'list_mailing_lists', {});
    const list = (lists.data as MailingList[]).find((l) => l.email === email);
    if (!list)
      return panel.render(
        reply,
        holder,
        'error',
        { nav: 'email', title: t('notFound.title'), message: t('mailingList.notFound', { email }) },
        404,
      );
    const rows = list.members.map((member) => ({
      cells: [member, { view: '/remove-member', data: { list: list.email, email: member, csrf, t } }],
    }));
    return panel.render(
      reply,
      holder,
      'mailing-list',
      {
        nav: 'email',
        title: t('mailingList.title', { email }),
        notice: state.notice ?? '',
        errors: state.errors ?? {},
        email,
        owner: list.owner,
        subscribe: commandAddress(email, 'subscribe'),
        ownerAddress: commandAddress(email, 'owner'),
        members: {
          columns: ['member', 'actions'].map((c) => ({ label: t(`mailingList.columns.${c}`) })),
          rows,
        },
        memberForm: formView(memberForm(t), state.member?.values, state.member?.errors),
      },
      status,
    );
  };

  app.get(
    '/email/list',
    withHolder(async (request, reply, holder) => {
      const { email } = request.query as Record<string, unknown>;
      return show(request, reply, holder, typeof email === 'string' ? email : '', {
        notice: panel.takeNotice(request, reply, holder),
      });
    }),
  );

  app.post(
    '/email/list/members',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const list = field(request, 'list');
      const email = field(request, 'email').trim().toLowerCase();
      try {
        await panel.run(request, holder, 'add_list_member', { list, email });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, memberForm(t), error);
        return show(request, reply, holder, list, { member: { values: { email }, errors } }, error.status);
      }
      return panel.redirectWithNotice(
        reply,
        holder,
        mailingListPath(list),
        t('mailingList.memberAdded', { email, list }),
      );
    }),
  );

  app.post(
    '/email/list/members/remove',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const list = field(request, 'list');
      const email = field(request, 'email');
      try {
        await panel.run(request, holder, 'remove_list_member', { list, email });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, { email: { label: t('mailingList.member'), id: 'row-email' } }, error);
        const form = errors.form ?? errors.email ?? error.message;
        return show(request, reply, holder, list, { errors: { form } }, error.status);
      }
      return panel.redirectWithNotice(
        reply,
        holder,
        mailingListPath(list),
        t('mailingList.memberRemoved', { email, list }),
      );
    }),
  );
}
