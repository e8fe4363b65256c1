// One mailbox of the Email page: its password (change_mailbox_password) and its quota
// (change_mailbox_quota). Its address comes in the query (the page) or the form (a change); a
// mailbox the account does not have is the panel's page for an address it does not have.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const passwordForm = (t: Translate): FormSpec => ({
  password: { label: t('mailbox.new'), secret: true },
  password2: { label: t('mailbox.repeat'), secret: true },
});
const quotaForm = (t: Translate): FormSpec => ({ quota: { label: t('mailbox.quota') } });

interface State {
  notice?: string;
  password?: FormErrors;
  quota?: { values: Record<string, string>; errors: FormErrors };
}

/** A mailbox's quota in the holder's words. */
export const quotaText = (t: Translate, quota: string) =>
  quota === 'unlimited' ? t('email.unlimited') : t('email.quotaMb', { quota });

/** The page of a mailbox: `/email/mailbox?email=<address>`. */
export const mailboxPath = (email: string) => `/email/mailbox?${new URLSearchParams({ email })}`;

export function registerMailboxPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    email: string,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const list = await panel.run(request, holder, 'list_mailboxes', {});
    const mailbox = (list.data as { email: string; quota: string }[]).find((m) => m.email === email);
    if (!mailbox)
      return panel.render(
        reply,
        holder,
        'error',
        { nav: 'email', title: t('notFound.title'), message: t('mailbox.notFound', { email }) },
        404,
      );
    return panel.render(
      reply,
      holder,
      'mailbox',
      {
        nav: 'email',
        title: t('mailbox.title', { email }),
        notice: state.notice ?? '',
        email,
        quota: quotaText(t, mailbox.quota),
        passwordForm: formView(passwordForm(t), {}, state.password),
        quotaForm: formView(
          quotaForm(t),
          state.quota?.values ?? { quota: mailbox.quota },
          state.quota?.errors,
        ),
      },
      status,
    );
  };

  app.get(
    '/email/mailbox',
    withHolder(async (request, reply, holder) => {
      const { email } = request.query as Record<string, unknown>;
      return show(request, reply, holder, typeof email === 'string' ? email : '', {
        notice: panel.takeNotice(request, reply, holder),
      });
    }),
  );

  app.post(
    '/email/mailbox/password',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const email = field(request, 'email');
      const password = field(request, 'password');
      const differ = password !== field(request, 'password2') ? t('mailbox.differ') : '';
      let thrown: unknown;
      if (!differ) {
        try {
          await panel.run(request, holder, 'change_mailbox_password', { email, password });
          return panel.redirectWithNotice(
            reply,
            holder,
            mailboxPath(email),
            t('mailbox.passwordChanged', { email }),
          );
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          thrown = error;
        }
      }
      const errors = refusalIn(t, passwordForm(t), thrown, { password2: differ });
      const status = thrown instanceof ApiError ? thrown.status : 400;
      return show(request, reply, holder, email, { password: errors }, status);
    }),
  );

  app.post(
    '/email/mailbox/quota',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const email = field(request, 'email');
      const quota = field(request, 'quota').trim();
      try {
        const changed = await panel.run(request, holder, 'change_mailbox_quota', { email, quota });
        const now = (changed.data as { quota: string }).quota;
        return panel.redirectWithNotice(
          reply,
          holder,
          mailboxPath(email),
          t('mailbox.quotaChanged', { email, quota: quotaText(t, now) }),
        );
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, quotaForm(t), error);
        return show(request, reply, holder, email, { quota: { values: { quota }, errors } }, error.status);
      }
    }),
  );
}
