// Home: what the account uses of every limit (CONTRACT §14), as meters, from account_info.
import type { FastifyInstance } from 'fastify';
import type { Panel, WithHolder } from './page.ts';

/** The limits Home shows, in its order; quota and bandwidth are in MB. */
const LIMITS = [
  'addondomains',
  'parkeddomains',
  'subdomains',
  'email',
  'ftp',
  'sql',
  'maillist',
  'cron_jobs',
  'quota',
  'bandwidth',
] as const;
const IN_MB = new Set<string>(['quota', 'bandwidth']);

interface Limit {
  used: number;
  limit: string;
}

export function registerHomePage(app: FastifyInstance, panel: Panel, withHolder: WithHolder): void {
  app.get(
    '/',
    withHolder(async (request, reply, holder) => {
      const { t } = holder;
      const info = await panel.run(request, holder, 'account_info', {});
      const limits = (info.data as { limits: Record<string, Limit> }).limits;
      const rows = LIMITS.filter((name) => limits[name]).map((name) => {
        const { used, limit } = limits[name]!;
        const unlimited = limit === 'unlimited';
        const mb = IN_MB.has(name);
        const label = t(`home.limits.${name}`);
        const text = unlimited
          ? t(mb ? 'home.usedMbUnlimited' : 'home.usedUnlimited', { used })
          : t(mb ? 'home.usedMb' : 'home.used', { used, limit });
        const meterName = unlimited
          ? t('home.meterUnlimited', { name: label, used })
          : t('home.meter', { name: label, used, limit: mb ? `${limit} MB` : limit });
        const max = unlimited ? Math.max(used, 1) : Math.max(Number(limit), 1);
        return { name, label, text, meterName, used: unlimited ? 0 : used, max, unlimited };
      });
      return panel.render(reply, holder, 'home', {
        nav: 'home',
        title: t('home.title'),
        notice: panel.takeNotice(request, reply, holder),
        rows,
      });
    }),
  );
}
