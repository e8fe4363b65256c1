// Domains: the account's domains, an add form (addon, parked, subdomain) and a remove button for
// each that is not the main domain, through list_domains, add_domain and remove_domain. A
// refusal for the limit (limit_reached, which names no parameter) is explained beside Type.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from '../core/errors.ts';
import type { FormErrors, FormSpec } from '../web-kit/form.ts';
import { formView } from '../web-kit/form.ts';
import { formatDate } from '../web-kit/format.ts';
import type { Translate } from './i18n.ts';
import { field, type Holder, type Panel, type WithHolder } from './page.ts';
import { refusalIn } from './refusal.ts';

const TYPES = ['addon', 'parked', 'subdomain'] as const;
/** The limit of each type of domain, as account_info names it. */
const LIMIT_OF: Record<string, string> = {
  addon: 'addondomains',
  parked: 'parkeddomains',
  subdomain: 'subdomains',
};

const addForm = (t: Translate): FormSpec => ({
  domain: { label: t('domains.domain') },
  type: { label: t('domains.type') },
  docroot: { label: t('domains.docroot') },
});

interface DomainRow {
  domain: string;
  type: string;
  docroot: string;
  created: string;
}
interface Limit {
  used: number;
  limit: string;
}

export function registerDomainsPage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  const show = async (
    request: Parameters<Panel['run']>[0],
    reply: FastifyReply,
    holder: Holder,
    state: { values?: Record<string, string>; errors?: FormErrors; notice?: string },
    status = 200,
  ) => {
    const { t } = holder;
    const [list, info] = await Promise.all([
      panel.run(request, holder, 'list_domains', {}),
      panel.run(request, holder, 'account_info', {}),
    ]);
    const limits = (info.data as { limits: Record<string, Limit> }).limits;
    const rows = (list.data as DomainRow[]).map((d) => ({
      cells: [
        d.domain,
        t(`domains.types.${d.type}`, { defaultValue: d.type }),
        d.type === 'parked' ? '—' : { text: d.docroot, code: true },
        formatDate(d.created),
        d.type === 'main'
          ? '—'
          : { view: '/remove-domain', data: { domain: d.domain, csrf: holder.session.csrf, t } },
      ],
    }));
    const inUse = TYPES.map((type) => {
      const limit = limits[LIMIT_OF[type]!];
      const name = t(`domains.types.${type}`);
      if (!limit) return '';
      return limit.limit === 'unlimited'
        ? t('domains.inUseUnlimited', { name, used: limit.used })
        : t('domains.inUse', { name, used: limit.used, limit: limit.limit });
    }).filter(Boolean);
    return panel.render(
      reply,
      holder,
      'domains',
      {
        nav: 'domains',
        title: t('domains.title'),
        notice: state.notice ?? '',
        columns: ['domain', 'type', 'docroot', 'added', 'actions'].map((c) => ({
          label: t(`domains.columns.${c}`),
        })),
        rows,
        inUse,
        types: TYPES.map((type) => [type, t(`domains.types.${type}`)]),
        form: formView(addForm(t), state.values, state.errors),
      },
      status,
    );
  };

  app.get(
    '/domains',
    withHolder(async (request, reply, holder) =>
      show(request, reply, holder, { notice: panel.takeNotice(request, reply, holder) }),
    ),
  );

  app.post(
    '/domains',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const values = {
        domain: field(request, 'domain').trim().toLowerCase(),
        type: field(request, 'type'),
        docroot: field(request, 'docroot').trim(),
      };
      try {
        await panel.run(request, holder, 'add_domain', values);
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const limit = await limitText(request, panel, holder, values.type);
        const errors = refusalIn(
          t,
          addForm(t),
          error,
          {},
          { limit_reached: { field: 'type', message: limit } },
        );
        return show(request, reply, holder, { values, errors }, error.status);
      }
      return panel.redirectWithNotice(
        reply,
        holder,
        '/domains',
        t('domains.added', { domain: values.domain }),
      );
    }),
  );

  app.post(
    '/domains/remove',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const domain = field(request, 'domain');
      try {
        await panel.run(request, holder, 'remove_domain', { domain });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        const errors = refusalIn(t, { domain: { label: t('domains.domain'), id: 'remove-domain' } }, error);
        return show(
          request,
          reply,
          holder,
          { errors: { form: errors.form ?? errors.domain ?? error.message } },
          error.status,
        );
      }
      return panel.redirectWithNotice(reply, holder, '/domains', t('domains.removed', { domain }));
    }),
  );
}

/** Why a domain of `type` cannot be added: the account's limit for it, in the holder's words. */
async function limitText(request: Parameters<Panel['run']>[0], panel: Panel, holder: Holder, type: string) {
  const { t } = holder;
  const info = await panel.run(request, holder, 'account_info', {});
  const limits = (info.data as { limits: Record<string, Limit> }).limits;
  const limit = limits[LIMIT_OF[type] ?? '']?.limit ?? '0';
  return t('domains.limitReached', { limit, name: t(`domains.types.${type}`, { defaultValue: type }) });
}
