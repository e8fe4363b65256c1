// FTP: the account's FTP logins, an add form (login, password, directory, quota) and a remove
// button for each, through list_ftp_accounts, add_ftp_account and remove_ftp_account. How to
// connect (explicit TLS, the server's name and port) is said above the list. A refusal for the
// limit (limit_reached, which names no parameter) is explained beside Login.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../core/errors.ts';
import type { FormErrors, FormSpec } from '../web-kit/form.ts';
import { formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const addForm = (t: Translate): FormSpec => ({
  login: { label: t('ftp.login') },
  password: { label: t('ftp.password'), secret: true },
  directory: { label: t('ftp.directory') },
  quota: { label: t('ftp.quota') },
});

interface FtpRow {
  login: string;
  directory: string;
  quota: string;
  created: string;
}
interface Limit {
  used: number;
  limit: string;
}

export function registerFtpPage(
  app: FastifyInstance,
  panel: Panel,
  withHolder: WithHolder,
  server: { host: string; port: number },
): void {
  const show = async (
    request: Parameters<Panel['run']>[0],
    reply: FastifyReply,
    holder: Holder,
    state: { values?: Record<string, string>; errors?: FormErrors; notice?: string },
    status = 200,
  ) => {
    const { t } = holder;
    const [list, info] = await Promise.all([
      panel.run(request, holder, 'list_ftp_accounts', {}),
      panel.run(request, holder, 'account_info', {}),
    ]);
    const limit = (info.data as { limits: Record<string, Limit> }).limits.ftp;
    const rows = (list.data as FtpRow[]).map((f) => ({
      cells: [
        f.login,
        { text: f.directory === '' ? '/' : f.directory, code: true },
        f.quota === 'unlimited' ? t('ftp.unlimited') : t('ftp.megabytes', { quota: f.quota }),
        formatDate(f.created),
        { view: '/remove-ftp', data: { login: f.login, csrf: holder.session.csrf, t } },
      ],
    }));
    const inUse = !limit
      ? ''
      : limit.limit === 'unlimited'
        ? t('ftp.inUseUnlimited', { used: limit.used })
        : t('ftp.inUse', { used: limit.used, limit: limit.limit });
    return panel.render(
      reply,
      holder,
      'ftp',
      {
        nav: 'ftp',
        title: t('ftp.title'),
        notice: state.notice ?? '',
        connect: t('ftp.connect', { host: server.host, port: server.port, user: holder.account.user }),
        columns: ['login', 'directory', 'quota', 'added', 'actions'].map((c) => ({
          label: t(`ftp.columns.${c}`),
        })),
        rows,
        inUse,
        form: formView(addForm(t), state.values, state.errors),
      },
      status,
    );
  };

  app.get(
    '/ftp',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/ftp',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = {
        login: field(request, 'login').trim().toLowerCase(),
        directory: field(request, 'directory').trim(),
        quota: field(request, 'quota').trim(),
      };
      const params: Record<string, string> = { login: values.login, password: field(request, 'password') };
      if (values.directory !== '') params.directory = values.directory;
      if (values.quota !== '') params.quota = values.quota;
      let made: FtpRow;
      try {
        made = (await panel.run(request, holder, 'add_ftp_account', params)).data as FtpRow;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const info = await panel.run(request, holder, 'account_info', {});
        const limit = (info.data as { limits: Record<string, Limit> }).limits.ftp?.limit ?? '0';
        const errors = refusalIn(
          t,
          addForm(t),
          error,
          {},
          { limit_reached: { field: 'login', message: t('ftp.limitReached', { limit }) } },
        );
        return show(request, reply, holder, { values, errors }, error.status);
      }
      return panel.redirectWithNotice(reply, holder, '/ftp', t('ftp.added', { login: made.login }));
    }),
  );

  app.post(
    '/ftp/remove',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const login = field(request, 'login');
      try {
        await panel.run(request, holder, 'remove_ftp_account', { login });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, { login: { label: t('ftp.login'), id: 'remove-ftp' } }, error);
        return show(
          request,
          reply,
          holder,
          { errors: { form: errors.form ?? errors.login ?? error.message } },
          error.status,
        );
      }
      return panel.redirectWithNotice(reply, holder, '/ftp', t('ftp.removed', { login }));
    }),
  );
}
