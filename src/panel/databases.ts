// Databases: the account's MariaDB databases and database users (list_databases), a form to create
// a database (add_database), one to add a user (add_database_user), one to change a user's
// password (change_database_password), one to grant a user a database
// or take it back (grant_database, revoke_database), and a remove button for each database and
// user. A refusal for the sql limit (limit_reached, which names no parameter) is explained beside
// the database's name, one for the number of users beside the user's. Passwords are never written
// back into the page.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../core/errors.ts';
import type { FormErrors, FormSpec } from '../web-kit/form.ts';
import { formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const databaseForm = (t: Translate): FormSpec => ({ name: { label: t('databases.name') } });
const userForm = (t: Translate): FormSpec => ({
  dbuser: { label: t('databases.userName'), params: ['name'] },
  password: { label: t('databases.password'), secret: true, id: 'dbuser-password' },
});
const passwordForm = (t: Translate): FormSpec => ({
  holder: { label: t('databases.passwordUser'), id: 'password-user', params: ['name'] },
  password: { label: t('databases.newPassword'), secret: true, id: 'new-dbuser-password' },
});
const grantForm = (t: Translate): FormSpec => ({
  database: { label: t('databases.database'), id: 'grant-database' },
  grantee: { label: t('databases.user'), id: 'grant-user', params: ['dbuser'] },
});

interface Listing {
  databases: { name: string; users: string[]; created: string }[];
  users: { name: string; databases: string[]; created: string }[];
}
interface Limit {
  used: number;
  limit: string;
}
type Which = 'database' | 'user' | 'password' | 'grant' | 'remove';
interface State {
  which?: Which;
  values?: Record<string, string>;
  errors?: FormErrors;
  notice?: string;
}

export function registerDatabasesPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: Parameters<Panel['run']>[0],
    reply: FastifyReply,
    holder: Holder,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const [list, info] = await Promise.all([
      panel.run(request, holder, 'list_databases', {}),
      panel.run(request, holder, 'account_info', {}),
    ]);
    const { databases, users } = list.data as Listing;
    const sql = (info.data as { limits: Record<string, Limit> }).limits.sql;
    const remove = (action: string, name: string) => ({
      view: '/remove-database',
      data: { action, name, csrf: holder.session.csrf, t },
    });
    const none = (list: string[]) => (list.length === 0 ? '—' : list.join(', '));
    const formFor = (which: Which, spec: FormSpec) =>
      formView(spec, state.which === which ? state.values : {}, state.which === which ? state.errors : {});
    return panel.render(
      reply,
      holder,
      'databases',
      {
        nav: 'databases',
        title: t('databases.title'),
        notice: state.notice ?? '',
        formError: state.which === 'remove' ? (state.errors?.form ?? '') : '',
        databaseColumns: ['database', 'users', 'created', 'actions'].map((c) => ({
          label: t(`databases.columns.${c}`),
        })),
        databaseRows: databases.map((d) => ({
          cells: [
            { text: d.name, code: true },
            none(d.users),
            formatDate(d.created),
            remove('/databases/remove', d.name),
          ],
        })),
        userColumns: ['user', 'databases', 'created', 'actions'].map((c) => ({
          label: t(`databases.columns.${c}`),
        })),
        userRows: users.map((u) => ({
          cells: [
            { text: u.name, code: true },
            none(u.databases),
            formatDate(u.created),
            remove('/databases/users/remove', u.name),
          ],
        })),
        inUse: sql
          ? sql.limit === 'unlimited'
            ? t('databases.inUseUnlimited', { used: sql.used })
            : t('databases.inUse', { used: sql.used, limit: sql.limit })
          : '',
        prefix: `${holder.account.user}_`,
        databaseOptions: databases.map((d) => [d.name, d.name]),
        userOptions: users.map((u) => [u.name, u.name]),
        databaseForm: formFor('database', databaseForm(t)),
        userForm: formFor('user', userForm(t)),
        grantForm: formFor('grant', grantForm(t)),
        passwordForm: formFor('password', passwordForm(t)),
      },
      status,
    );
  };

  /** Runs an operation of a form; a refusal shows the page again with the form's errors. */
  const submit = (
    which: Which,
    spec: (t: Translate) => FormSpec,
    call: (values: Record<string, string>) => [operation: string, params: Record<string, string>],
    read: (request: Parameters<Panel['run']>[0]) => Record<string, string>,
    notice: (t: Translate, values: Record<string, string>) => string,
  ) =>
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = read(request);
      try {
        const [operation, params] = call(values);
        await panel.run(request, holder, operation, params);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        // The user form's limit is the configuration's, the database form's the plan's sql.
        const sql = await panel.run(request, holder, 'account_info', {});
        const limit = (sql.data as { limits: Record<string, Limit> }).limits.sql?.limit ?? '0';
        const placed =
          which === 'user'
            ? { field: 'dbuser', message: t('databases.usersLimitReached') }
            : { field: 'name', message: t('databases.limitReached', { limit }) };
        const errors = refusalIn(t, spec(t), error, {}, { limit_reached: placed });
        if (which === 'remove') errors.form ??= Object.values(errors).join(' ');
        const { password: _, ...kept } = values;
        return show(request, reply, holder, { which, values: kept, errors }, error.status);
      }
      return panel.redirectWithNotice(reply, holder, '/databases', notice(t, values));
    });

  app.get(
    '/databases',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );
  app.post(
    '/databases',
    submit(
      'database',
      databaseForm,
      (v) => ['add_database', { name: v.name! }],
      (request) => ({ name: field(request, 'name').trim() }),
      (t, v) => t('databases.added', { name: v.name }),
    ),
  );
  app.post(
    '/databases/users',
    submit(
      'user',
      userForm,
      (v) => ['add_database_user', { name: v.dbuser!, password: v.password! }],
      (request) => ({ dbuser: field(request, 'dbuser').trim(), password: field(request, 'password') }),
      (t, v) => t('databases.userAdded', { name: v.dbuser }),
    ),
  );
  app.post(
    '/databases/users/password',
    submit(
      'password',
      passwordForm,
      (v) => ['change_database_password', { name: v.holder!, password: v.password! }],
      (request) => ({ holder: field(request, 'holder'), password: field(request, 'password') }),
      (t, v) => t('databases.passwordChanged', { name: v.holder }),
    ),
  );
  for (const [path, operation, done] of [
    ['/databases/grant', 'grant_database', 'databases.granted'],
    ['/databases/revoke', 'revoke_database', 'databases.revoked'],
  ] as const)
    app.post(
      path,
      submit(
        'grant',
        grantForm,
        (v) => [operation, { database: v.database!, dbuser: v.grantee! }],
        (request) => ({ database: field(request, 'database'), grantee: field(request, 'grantee') }),
        (t, v) => t(done, { database: v.database, user: v.grantee }),
      ),
    );
  for (const [path, operation, done] of [
    ['/databases/remove', 'remove_database', 'databases.removed'],
    ['/databases/users/remove', 'remove_database_user', 'databases.userRemoved'],
  ] as const)
    app.post(
      path,
      submit(
        'remove',
        (t) => ({ name: { label: t('databases.name'), id: 'remove-name' } }),
        (v) => [operation, { name: v.name! }],
        (request) => ({ name: field(request, 'name') }),
        (t, v) => t(done, { name: v.name }),
      ),
    );
}
