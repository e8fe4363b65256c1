import { formatLimit } from '../core/values.ts';
import { type Account, ownedSummaries } from '../store/accounts.ts';
import { streamAccounts } from './listing.ts';
import { defineOperation } from './operation.ts';
import { scopeOf } from './principal.ts';
import { summaryRecord } from './record.ts';
import { results } from './results.ts';

export const usageStatistics = defineOperation({
  name: 'usagestatistics',
  summary: "Every account's record with its usage, and for resellers the usage of their accounts.",
  changesState: false,
  audiences: ['admin', 'reseller'],
  params: {},
  example: {},
  result: results.usage,
  errors: [],
  async run(ctx) {
    const { fleet } = ctx.services;
    const scope = scopeOf(ctx.principal);
    const entries = async (page: Account[]) => {
      // Under a reseller, only what its scope holds: the accounts of a sub-reseller it owns are
      // that sub-reseller's, not the caller's, and are neither listed nor summed here.
      const resellers = page
        .filter(
          (account) =>
            account.reseller && (scope === null || ('owner' in scope && account.user === scope.owner)),
        )
        .map((account) => account.user);
      const owned = await ownedSummaries(ctx.db, resellers);
      return page.map((account) => {
        const record = summaryRecord(account, fleet.hosting(account.server));
        const summary = owned.get(account.user) ?? { users: [], quotaUsage: 0, bandwidthUsage: 0 };
        return {
          ...record,
          quota_usage_reseller: account.reseller ? summary.quotaUsage : 0,
          bandwidth_usage_reseller: account.reseller ? summary.bandwidthUsage : 0,
          ...(account.reseller && {
            reseller_data: {
              accounts: summary.users,
              contactemail: account.contactEmail,
              ips: { ipv4: record.dedicatedip.ipv4, ipv6: record.dedicatedip.ipv6 },
              name: account.user,
              nameservers: account.nameservers,
              reseller_bandwidth: formatLimit(account.reseller.bandwidth),
              reseller_limt: formatLimit(account.reseller.limit),
              reseller_quota: formatLimit(account.reseller.quota),
            },
          }),
        };
      });
    };
    return {
      data: null,
      info: '',
      stream: streamAccounts(ctx.db, scope, entries, (count) => `Usage of ${count} account(s)`),
    };
  },
});
