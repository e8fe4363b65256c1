// Backups: the account's snapshots (list_backups), a restore of its files, one path of them, its
// mail or one of its databases (restore_backup), and a snapshot of the home as a .tar.gz download, streamed from the
// repository: restic writes the home's own tree alone, links as links, so nothing from outside the
// home is in it. A snapshot is found among the account's own (on every server that holds some)
// before anything is read.
import { createGzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { findSnapshot, type HeldSnapshot, heldSnapshots } from '../operations/backup-common.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const pathForm = (t: Translate): FormSpec => ({
  snapshot: { label: t('backups.snapshot') },
  path: { label: t('backups.path') },
});

interface Snapshot {
  id: string;
  time: string;
  size: number;
}

interface State {
  notice?: string;
  values?: Record<string, string>;
  errors?: FormErrors;
}

export function registerBackupsPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    // A server that keeps no backups (the record driver) has none to show.
    const { snapshots } = panel.services.fleet.backupsOn(holder.account.server)
      ? ((await panel.run(request, holder, 'list_backups', {})).data as { snapshots: Snapshot[] })
      : { snapshots: [] };
    const newestFirst = [...snapshots].reverse();
    // Each of the account's databases has its own restore button (none where MariaDB is not
    // offered to the account).
    let databases: string[] = [];
    if (snapshots.length > 0)
      try {
        const listed = (await panel.run(request, holder, 'list_databases', {})).data as {
          databases: { name: string }[];
        };
        databases = listed.databases.map((d) => d.name);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
      }
    const rows = newestFirst.map((snapshot) => ({
      cells: [
        formatDate(snapshot.time),
        String(snapshot.size),
        { view: '/backup-actions', data: { id: snapshot.id, csrf: holder.session.csrf, t, databases } },
      ],
    }));
    return panel.render(
      reply,
      holder,
      'backups',
      {
        nav: 'backups',
        title: t('backups.title'),
        notice: state.notice ?? '',
        errors: state.errors ?? {},
        columns: ['time', 'size', 'actions'].map((c) => ({ label: t(`backups.columns.${c}`) })),
        rows,
        form: formView(pathForm(t), state.values, state.errors),
        choices: newestFirst.map((s) => [s.id, formatDate(s.time)]),
      },
      status,
    );
  };

  app.get(
    '/backups',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/backups/restore',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const database = field(request, 'database');
      const values = {
        snapshot: field(request, 'snapshot'),
        what: database ? 'database' : field(request, 'what') === 'mail' ? 'mail' : 'files',
        path: database ? '' : field(request, 'path').trim(),
      };
      try {
        await panel.run(request, holder, 'restore_backup', {
          snapshot: values.snapshot,
          what: values.what,
          ...(values.path && { path: values.path }),
          ...(database && { database }),
        });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, pathForm(t), error);
        return show(request, reply, holder, { values, errors }, error.status);
      }
      const what = database
        ? t('backups.database', { name: database })
        : values.path || t(`backups.${values.what}`);
      return panel.redirectWithNotice(reply, holder, '/backups', t('backups.restored', { what }));
    }),
  );

  app.get(
    '/backups/download',
    withHolder(async (request, reply, holder) => {
      const given = (request.query as Record<string, unknown>).snapshot;
      if (
        !panel.services.fleet.backupsOn(holder.account.server) ||
        typeof given !== 'string' ||
        !/^[0-9a-f]{8,64}$/.test(given)
      )
        return reply.code(404).type('text/plain').send('Not found');
      let snapshot: HeldSnapshot;
      try {
        const { account } = holder;
        const current = account.server ?? panel.services.config.nodeName;
        snapshot = findSnapshot(
          await heldSnapshots(panel.services, panel.services.store.db, account.user, current),
          given,
        );
      } catch {
        return reply.code(404).type('text/plain').send('Not found');
      }
      const { id } = snapshot;
      // From the repository that holds it: this server's, or another's over the fleet's calls.
      const tar = await panel.services.fleet.backupsOn(snapshot.server)!.homeArchive(holder.account.user, id);
      const name = `${holder.account.user}-${id.slice(0, 8)}.tar.gz`;
      return reply
        .type('application/gzip')
        .header('content-disposition', `attachment; filename="${name}"`)
        .header('cache-control', 'no-store')
        .send(tar.pipe(createGzip()));
    }),
  );
}
