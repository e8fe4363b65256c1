// Security: the holder's own password (change_password, which ends the account's other sessions)
// and API tokens (list_tokens, add_token, remove_token). A new token is shown on the answer to the
// form that made it, once; it is kept nowhere else, not even in a notice.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const passwordForm = (t: Translate): FormSpec => ({
  current_password: { label: t('security.current'), secret: true },
  password: { label: t('security.new'), secret: true },
  password2: { label: t('security.repeat'), secret: true },
});
const tokenForm = (t: Translate): FormSpec => ({ name: { label: t('security.name'), id: 'token-name' } });

interface Token {
  name: string;
  created: string;
  last_used: string | null;
}

interface State {
  notice?: string;
  password?: { errors: FormErrors };
  token?: { values?: Record<string, string>; errors?: FormErrors };
  made?: { name: string; token: string };
  errors?: FormErrors;
}

export function registerSecurityPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const list = await panel.run(request, holder, 'list_tokens', {});
    const rows = (list.data as Token[]).map((token) => ({
      cells: [
        token.name,
        formatDate(token.created),
        formatDate(token.last_used),
        { view: '/remove-token', data: { name: token.name, csrf: holder.session.csrf, t } },
      ],
    }));
    return panel.render(
      reply,
      holder,
      'security',
      {
        nav: 'security',
        title: t('security.title'),
        notice: state.notice ?? '',
        errors: state.errors ?? {},
        passwordForm: formView(passwordForm(t), {}, state.password?.errors),
        tokenForm: formView(tokenForm(t), state.token?.values, state.token?.errors),
        columns: ['name', 'created', 'lastUsed', 'actions'].map((c) => ({
          label: t(`security.columns.${c}`),
        })),
        rows,
        made: state.made ?? null,
      },
      status,
    );
  };

  app.get(
    '/security',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/security/password',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const password = field(request, 'password');
      const differ = password !== field(request, 'password2') ? t('security.differ') : '';
      let thrown: unknown;
      if (!differ) {
        try {
          await panel.run(request, holder, 'change_password', {
            current_password: field(request, 'current_password'),
            password,
          });
          return panel.redirectWithNotice(reply, holder, '/security', t('security.changed'));
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          thrown = error;
        }
      }
      const errors = refusalIn(t, passwordForm(t), thrown, { password2: differ });
      return show(
        request,
        reply,
        holder,
        { password: { errors } },
        thrown instanceof ApiError ? thrown.status : 400,
      );
    }),
  );

  app.post(
    '/security/tokens',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const name = field(request, 'name').trim();
      try {
        const made = await panel.run(request, holder, 'add_token', { name });
        const { token } = made.data as { token: string };
        return show(request, reply, holder, {
          notice: t('security.created', { name }),
          made: { name, token },
        });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, tokenForm(t), error);
        return show(request, reply, holder, { token: { values: { name }, errors } }, error.status);
      }
    }),
  );

  app.post(
    '/security/tokens/remove',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const name = field(request, 'name');
      try {
        await panel.run(request, holder, 'remove_token', { name });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, {}, error);
        return show(request, reply, holder, { errors: { form: errors.form ?? error.message } }, error.status);
      }
      return panel.redirectWithNotice(reply, holder, '/security', t('security.removed', { name }));
    }),
  );
}
