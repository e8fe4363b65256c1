// account_info (CONTRACT §14), an operation of the account holder's, or of an administrator or
// reseller acting for one: the holder's own account, its record, its usage, and every limit as used
// against allowed. The surfaces that serve it to holders (the customer listener, /api/account/)
// come with the customer side; it runs through the one pipeline like every operation.
import { formatLimit } from '../core/values.ts';
import type { Account, LimitName } from '../store/accounts.ts';
import { cronJobsOf } from '../store/cron-jobs.ts';
import { databasesOf } from '../store/databases.ts';
import { type Domain, domainsOf } from '../store/domains.ts';
import { ftpAccountsOf } from '../store/ftp-accounts.ts';
import { mailboxesOf } from '../store/mailboxes.ts';
import { mailingListsOf } from '../store/mailing-lists.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { summaryRecord } from './record.ts';
import { results } from './results.ts';

/** What an account has of each kind of object whose number a limit bounds. */
interface InUse {
  account: Account;
  domains: readonly Domain[];
  mailboxes: number;
  mailingLists: number;
  /** Its MariaDB databases (its database users are not counted). */
  databases: number;
  ftpAccounts: number;
  cronJobs: number;
  /** The configuration's `cron_jobs`: the same limit for every account. */
  cronJobsLimit: number;
}
const domainsOfKind = (kind: Domain['kind']) => (using: InUse) =>
  using.domains.filter((domain) => domain.kind === kind).length;

/**
 * The limits a holder sees (CONTRACT §14's table), by the name the record gives them, with the
 * account's limit and what of it is in use. Domains are counted from the account's objects; disk
 * and bandwidth are measured (the usage refresh); mailboxes, FTP accounts, mailing lists,
 * MariaDB databases and cron jobs are counted from the account's objects (its own address and its
 * own login are not among them, nor are its database users); cron jobs' limit is the
 * configuration's `cron_jobs`.
 */
const HOLDER_LIMITS: Record<
  string,
  { limit: LimitName | ((using: InUse) => number); used: (using: InUse) => number }
> = {
  addondomains: { limit: 'addondomains', used: domainsOfKind('addon') },
  parkeddomains: { limit: 'parkeddomains', used: domainsOfKind('parked') },
  subdomains: { limit: 'subdomains', used: domainsOfKind('subdomain') },
  email: { limit: 'email_accounts', used: ({ mailboxes }) => mailboxes },
  ftp: { limit: 'ftp', used: ({ ftpAccounts }) => ftpAccounts },
  sql: { limit: 'sql', used: ({ databases }) => databases },
  maillist: { limit: 'maillist', used: ({ mailingLists }) => mailingLists },
  quota: { limit: 'quota', used: ({ account }) => account.usage.quota },
  bandwidth: { limit: 'bandwidth', used: ({ account }) => account.usage.bandwidth },
  cron_jobs: { limit: ({ cronJobsLimit }) => cronJobsLimit, used: ({ cronJobs }) => cronJobs },
};

export function limitsInUse(using: InUse): Record<string, { used: number; limit: string }> {
  return Object.fromEntries(
    Object.entries(HOLDER_LIMITS).map(([name, { limit, used }]) => [
      name,
      {
        used: used(using),
        limit: formatLimit(typeof limit === 'function' ? limit(using) : using.account.limits[limit]),
      },
    ]),
  );
}

export const accountInfo = defineOperation({
  name: 'account_info',
  summary: "The holder's own account: its record, its usage and each limit as used and allowed.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.accountInfo,
  errors: [],
  async run(ctx) {
    // The account is the principal's own (or the one acted for), read afresh: never a parameter.
    const account = await holderAccount(ctx.db, ctx.principal);
    const record = summaryRecord(account, ctx.services.fleet.hosting(account.server));
    const domains = await domainsOf(ctx.db, account.user);
    const { length: mailboxes } = await mailboxesOf(ctx.db, account.user);
    const { length: mailingLists } = await mailingListsOf(ctx.db, account.user);
    const { length: databases } = await databasesOf(ctx.db, account.user);
    const { length: ftpAccounts } = await ftpAccountsOf(ctx.db, account.user);
    const { length: cronJobs } = await cronJobsOf(ctx.db, account.user);
    const cronJobsLimit = ctx.services.config.cronJobs;
    const limits = limitsInUse({
      account,
      domains,
      mailboxes,
      mailingLists,
      databases,
      ftpAccounts,
      cronJobs,
      cronJobsLimit,
    });
    return {
      data: { ...record, limits },
      info: `Account ${account.user}`,
    };
  },
});
