// POST /api/account_info/ on the customer listener (CONTRACT §14), and /api/account/account_info/
// for the administrator or a reseller acting for a holder — the holder's own account: its record,
// its usage, and every limit as used against allowed.
import { formatLimit } from '../core/values.ts';
import type { Account, LimitName } from '../store/accounts.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { summaryRecord } from './record.ts';
import { results } from './results.ts';

/**
 * The limits a holder sees (CONTRACT §14's table), by the name the record gives them, with the
 * account's limit and what of it is in use. Disk and bandwidth are measured (the usage refresh);
 * Berth keeps no addon or parked domains, subdomains, mailboxes, FTP accounts, databases or
 * mailing lists of an account yet, so none of those is in use.
 */
const HOLDER_LIMITS: Record<string, { limit: LimitName; used: (account: Account) => number }> = {
  addondomains: { limit: 'addondomains', used: () => 0 },
  parkeddomains: { limit: 'parkeddomains', used: () => 0 },
  subdomains: { limit: 'subdomains', used: () => 0 },
  email: { limit: 'email_accounts', used: () => 0 },
  ftp: { limit: 'ftp', used: () => 0 },
  sql: { limit: 'sql', used: () => 0 },
  maillist: { limit: 'maillist', used: () => 0 },
  quota: { limit: 'quota', used: (account) => account.usage.quota },
  bandwidth: { limit: 'bandwidth', used: (account) => account.usage.bandwidth },
};

export function limitsInUse(account: Account): Record<string, { used: number; limit: string }> {
  return Object.fromEntries(
    Object.entries(HOLDER_LIMITS).map(([name, { limit, used }]) => [
      name,
      { used: used(account), limit: formatLimit(account.limits[limit]) },
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
    return { data: { ...record, limits: limitsInUse(account) }, info: `Account ${account.user}` };
  },
});
