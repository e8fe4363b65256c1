// remove_domain (CONTRACT §14): takes an addon domain, a parked domain or a subdomain from the
// account, with its site, zone (or its records in its parent's zone), certificate and mail domain.
// The files of its document root stay in the home: they are the holder's. The main domain goes
// only with the account; a domain with subdomains, mailboxes or forwarders goes once they have gone.
import { apiError, invalid } from '../core/errors.ts';
import { deleteDomain } from '../store/domains.ts';
import { domainOfAddress } from '../store/mailboxes.ts';
import { domainObject } from './add-domain.ts';
import { changeObjects } from './common.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeDomain = defineOperation({
  name: 'remove_domain',
  summary: 'Remove an addon domain, a parked domain or a subdomain from the account.',
  changesState: true,
  audiences: ['holder'],
  event: 'domain.removed',
  params: {
    domain: required(kinds.domain, 'The domain to remove'),
  },
  example: { domain: 'shop.example' },
  result: results.domain,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const { domain } = input;
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = before.domains.find((d) => d.domain === domain);
      if (!found) throw apiError('object_not_found', { kind: 'domain', name: domain }, 'domain');
      if (found.kind === 'main')
        throw invalid('domain', `${domain} is the account's main domain, which goes only with the account`);
      const under = before.domains.filter((d) => d.kind === 'subdomain' && d.domain.endsWith(`.${domain}`));
      if (under.length > 0)
        throw invalid(
          'domain',
          `its subdomains (${under.map((d) => d.domain).join(', ')}) must be removed first`,
        );
      const addresses = [...before.mailboxes, ...before.forwarders, ...before.mailing_lists]
        .map((m) => m.email)
        .filter((email) => domainOfAddress(email) === domain);
      if (addresses.length > 0)
        throw invalid(
          'domain',
          `its mailboxes, forwarders and mailing lists (${addresses.join(', ')}) must be removed first`,
        );
      await deleteDomain(db, account.user, domain);
      return found;
    });
    return { data: domainObject(removed), info: `Domain ${domain} removed` };
  },
});
