// add_domain (CONTRACT §14), an operation of the account holder's (or of an administrator or
// reseller acting for one): an addon domain (its own site, zone, certificate and mail domain), a
// parked domain (the main site under another name, with its own zone, certificate and mail domain)
// or a subdomain (`<label>.<a domain of the account>`: records in that domain's zone, its own site
// and certificate). The rules that span accounts and the account's limit are checked inside the
// transaction that adds it, so that concurrent adds neither overlap nor pass the limit.
import { apiError, invalid } from '../core/errors.ts';
import { type AddedDomainType, formatLimit, isAtOrUnder } from '../core/values.ts';
import { type LimitName, serializeAccountCreation } from '../store/accounts.ts';
import { type Domain, findOverlappingDomain, insertDomain, MAIN_DOCROOT } from '../store/domains.ts';
import { uniqueViolation } from '../store/errors.ts';
import { objectsOf } from '../store/objects.ts';
import { refuseHeldDomain } from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import { fleetServerNames } from '../store/servers.ts';
import { changeState, holderAccount } from './common.ts';
import { mailRoutingOf } from './mail-routing.ts';
import { defineOperation, kinds, optional, required } from './operation.ts';
import { results } from './results.ts';

/** The limit that bounds each kind of domain a holder adds. */
export const DOMAIN_LIMITS: Record<AddedDomainType, LimitName> = {
  addon: 'addondomains',
  parked: 'parkeddomains',
  subdomain: 'subdomains',
};

/** Labels a subdomain may not take: the zone already has them (www, and mail for local mail). */
const TAKEN_LABELS = new Set(['www', 'mail']);

/**
 * Refuses a name at, above or under a host name or name server of any server of the fleet (this
 * one's from its configuration, the others' from their profiles): the hosting company's own names
 * are never a holder's. createacct refuses only those at or under this server's, so a company may host
 * its own site (`example.net` beside `panel.example.net`).
 */
async function refuseServerNames(
  db: Db,
  own: { hostName: string; nameservers: readonly string[] },
  domain: string,
) {
  const names = [own.hostName, ...own.nameservers, ...(await fleetServerNames(db))].map((n) =>
    n.toLowerCase(),
  );
  const name = names.find((n) => isAtOrUnder(domain, n) || isAtOrUnder(n, domain));
  if (name !== undefined)
    throw invalid(
      'domain',
      `it is, lies above or lies under ${name}, a host name or name server of the hosting servers, which no holder may add`,
    );
}

/** A domain as add_domain and list_domains answer it. */
export function domainObject(domain: Domain) {
  return {
    domain: domain.domain,
    type: domain.kind,
    // A parked domain serves the main site's.
    docroot: domain.docroot ?? MAIN_DOCROOT,
    created: domain.createdAt.toISOString(),
  };
}

/**
 * The domain of the account a subdomain lies directly under (one label more); the zone that gets
 * its records. A subdomain under a subdomain is not one: it would have no zone of its own.
 */
function parentOf(domain: string, own: readonly Domain[]): Domain | undefined {
  const dot = domain.indexOf('.');
  const parent = domain.slice(dot + 1);
  return own.find((d) => d.domain === parent && d.kind !== 'subdomain');
}

export const addDomain = defineOperation({
  name: 'add_domain',
  summary: 'Add an addon domain, a parked domain or a subdomain to the account.',
  changesState: true,
  audiences: ['holder'],
  event: 'domain.added',
  params: {
    domain: required(kinds.newDomain, 'The domain; a subdomain given whole (`blog.example.com`)'),
    type: required(kinds.domainType, '`addon`, `parked` or `subdomain`'),
    docroot: optional(
      kinds.docroot,
      'Document root of an addon domain or subdomain, relative to the home; default `public_html/<domain>`',
    ),
  },
  example: { domain: 'shop.example', type: 'addon' },
  result: results.domain,
  errors: ['domain_in_use', 'limit_reached', 'object_exists'],
  async run(ctx, input) {
    const { domain, type } = input;
    if (type === 'parked' && input.docroot !== undefined)
      throw invalid('docroot', 'a parked domain serves the main site and has no document root of its own');
    const docroot = type === 'parked' ? null : (input.docroot ?? `public_html/${domain}`);
    // Asked of the DNS before the transaction: an addon or parked domain whose mail the world sends
    // to another server is no mail domain of this one (mail-routing.ts).
    const { services } = ctx;
    const holder = await holderAccount(services.store.db, ctx.principal);
    const mail =
      (type === 'addon' || type === 'parked') && holder.mailserver === 'local'
        ? await mailRoutingOf(services.config, services.fleet.hosting(holder.server), domain, [
            holder.dedicatedIpv4,
            holder.dedicatedIpv6,
          ])
        : 'here';
    const added = await changeState(ctx, async (db, system) => {
      // Concurrent adds and createacct calls take turns on the rules that span accounts.
      await serializeAccountCreation(db);
      await refuseServerNames(db, ctx.services.config, domain);
      // Locked until the commit: the account's adds take turns on its limits.
      const account = await holderAccount(db, ctx.principal);
      const before = await objectsOf(db, account.user);
      if (before.domains.some((d) => d.domain === domain))
        throw apiError('object_exists', { kind: 'domain', name: domain }, 'domain');
      // Another account's name (or one under or above it) first: for every kind, it is in use. The
      // other account's domain is not named: a neighbour learns no name its owner did not publish.
      if ((await findOverlappingDomain(db, domain, account.user)) !== undefined)
        throw apiError('domain_in_use', { domain }, 'domain');
      if (type === 'subdomain') {
        const parent = parentOf(domain, before.domains);
        if (!parent)
          throw invalid(
            'domain',
            `a subdomain is one label followed by the account's main, addon or parked domain (${before.domains
              .filter((d) => d.kind !== 'subdomain')
              .map((d) => `<label>.${d.domain}`)
              .join(', ')})`,
          );
        const label = domain.slice(0, -parent.domain.length - 1);
        if (TAKEN_LABELS.has(label))
          throw invalid('domain', `${label}.${parent.domain} is already served as part of ${parent.domain}`);
      } else {
        const own = before.domains.find(
          (d) => isAtOrUnder(domain, d.domain) || isAtOrUnder(d.domain, domain),
        );
        if (own)
          throw invalid(
            'domain',
            `it overlaps ${own.domain}, a domain of this account: a name under one of its domains is a subdomain`,
          );
      }
      await refuseHeldDomain(db, domain);

      const limitName = DOMAIN_LIMITS[type];
      const limit = account.limits[limitName];
      const used = before.domains.filter((d) => d.kind === type).length;
      if (limit !== null && used >= limit)
        throw apiError('limit_reached', { limit: limitName, value: formatLimit(limit) });

      const made: Domain = {
        domain,
        kind: type,
        docroot,
        createdAt: ctx.services.now(),
        ...(mail === 'elsewhere' && { mail: 'elsewhere' as const }),
      };
      try {
        await insertDomain(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'domain') throw apiError('domain_in_use', { domain }, 'domain');
        throw error;
      }
      await system({ kind: 'objects', account, before, objects: await objectsOf(db, account.user) });
      return made;
    });
    return { data: domainObject(added), info: `Domain ${domain} added` };
  },
});
