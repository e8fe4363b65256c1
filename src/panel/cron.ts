// Cron jobs: the account's jobs (list_cron_jobs), an add form (add_cron_job: a schedule of five
// cron fields and a command) and a remove button for each (remove_cron_job, by its id). A refusal
// for the limit (the configuration's cron_jobs, which names no parameter) is explained beside
// Schedule.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../core/errors.ts';
import { type FormErrors, type FormSpec, formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const addForm = (t: Translate): FormSpec => ({
  schedule: { label: t('cron.schedule') },
  command: { label: t('cron.command') },
});

interface CronJob {
  id: string;
  schedule: string;
  command: string;
  created: string;
}
interface Limit {
  used: number;
  limit: string;
}

interface State {
  notice?: string;
  values?: Record<string, string>;
  errors?: FormErrors;
}

export function registerCronPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const limitOf = async (request: FastifyRequest, holder: Holder): Promise<Limit> => {
    const info = await panel.run(request, holder, 'account_info', {});
    return (info.data as { limits: Record<string, Limit> }).limits.cron_jobs!;
  };

  const show = async (
    request: FastifyRequest,
    reply: FastifyReply,
    holder: Holder,
    state: State,
    status = 200,
  ) => {
    const { t } = holder;
    const [list, limit] = await Promise.all([
      panel.run(request, holder, 'list_cron_jobs', {}),
      limitOf(request, holder),
    ]);
    const rows = (list.data as CronJob[]).map((job) => ({
      cells: [
        { text: job.schedule, code: true },
        { text: job.command, code: true },
        formatDate(job.created),
        {
          view: '/remove-row',
          data: {
            action: '/cron/remove',
            name: 'id',
            value: job.id,
            text: t('cron.remove'),
            label: `${job.schedule} ${job.command}`,
            csrf: holder.session.csrf,
          },
        },
      ],
    }));
    return panel.render(
      reply,
      holder,
      'cron',
      {
        nav: 'cron',
        title: t('cron.title'),
        notice: state.notice ?? '',
        errors: state.errors && !state.values ? state.errors : {},
        columns: ['schedule', 'command', 'created', 'actions'].map((c) => ({
          label: t(`cron.columns.${c}`),
        })),
        rows,
        inUse: t('cron.inUse', { used: limit.used, limit: limit.limit }),
        form: formView(addForm(t), state.values, state.values ? state.errors : {}),
      },
      status,
    );
  };

  app.get(
    '/cron',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/cron',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = {
        schedule: field(request, 'schedule').trim(),
        command: field(request, 'command').trim(),
      };
      try {
        await panel.run(request, holder, 'add_cron_job', values);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const { limit } = await limitOf(request, holder);
        const errors = refusalIn(
          t,
          addForm(t),
          error,
          {},
          { limit_reached: { field: 'schedule', message: t('cron.limitReached', { limit }) } },
        );
        return show(request, reply, holder, { values, errors }, error.status);
      }
      return panel.redirectWithNotice(reply, holder, '/cron', t('cron.added'));
    }),
  );

  app.post(
    '/cron/remove',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const id = field(request, 'id');
      try {
        await panel.run(request, holder, 'remove_cron_job', { id });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, { id: { label: t('cron.job'), id: 'remove-job' } }, error);
        return show(
          request,
          reply,
          holder,
          { errors: { form: errors.form ?? errors.id ?? error.message } },
          error.status,
        );
      }
      return panel.redirectWithNotice(reply, holder, '/cron', t('cron.removed'));
    }),
  );
}
