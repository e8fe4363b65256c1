// list_domains (CONTRACT §14): every domain of the holder's account, the main one first, each as
// add_domain answers it.
import { domainsOf } from '../store/domains.ts';
import { domainObject } from './add-domain.ts';
import { holderAccount } from './common.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listDomains = defineOperation({
  name: 'list_domains',
  summary: "The account's domains: its main domain, addon and parked domains and subdomains.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.domains,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const domains = await domainsOf(ctx.db, account.user);
    return { data: domains.map(domainObject), info: `${domains.length} domain(s) of ${account.user}` };
  },
});
