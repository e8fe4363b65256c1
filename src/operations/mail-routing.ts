// Where mail for a domain a holder adds goes (CONTRACT §14, docs/customer.md): an addon or parked
// domain becomes a mail domain of this server only when the world's DNS does not already send its
// mail elsewhere. Otherwise the account next door could add a domain it does not own (a customer's
// company, a mail provider) and every account's mail to it would be delivered here instead of sent
// out. Decided once, when the domain is added, as control panels do: a domain whose MX (or, with no
// MX, whose address) is another server's keeps its mail there; one not yet in the DNS, or pointing
// here, is this server's.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Config } from '../config/index.ts';
import type { HostingProfile } from '../store/servers.ts';

export type MailRouting = 'here' | 'elsewhere';

/** The longest the DNS is asked, all questions together: past it the domain's mail is here. */
const DEADLINE_MS = 3000;

/** Top-level names the public DNS never has (RFC 6761): nothing to ask it about them. */
const SPECIAL_USE = /\.(example|test|invalid|localhost|local)$/;

/** The resolver mail checks use: `[linux] mail_dns_server` when set, the system's otherwise. */
function resolverOf(config: Config): Resolver {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  const server = config.linux.mailDnsServer;
  if (server) resolver.setServers([server]);
  return resolver;
}

/** The records of one type, or [] when the name has none, does not exist or cannot be asked. */
async function lookup(resolver: Resolver, name: string, type: 'MX' | 'A' | 'AAAA'): Promise<string[]> {
  try {
    if (type === 'MX') return (await resolver.resolveMx(name)).map((mx) => mx.exchange);
    return type === 'A' ? await resolver.resolve4(name) : await resolver.resolve6(name);
  } catch {
    return [];
  }
}

/**
 * Whether the DNS sends `domain`'s mail to this server (`here`) or to another (`elsewhere`): its MX
 * hosts' addresses, or without MX its own, against the addresses of the account's server. A name
 * the DNS does not answer for is `here`.
 */
export async function mailRoutingOf(
  config: Config,
  profile: HostingProfile,
  domain: string,
  dedicated: readonly (string | null)[],
): Promise<MailRouting> {
  const ours = new Set(
    [
      profile.sharedIpv4,
      profile.sharedIpv6,
      ...profile.ipPool.ipv4,
      ...profile.ipPool.ipv6,
      ...dedicated,
    ].filter((a): a is string => typeof a === 'string' && isIP(a) !== 0),
  );
  if (!config.linux.mailDnsServer && SPECIAL_USE.test(domain)) return 'here';
  const resolver = resolverOf(config);
  const ask = async (): Promise<MailRouting> => {
    const exchanges = (await lookup(resolver, domain, 'MX')).filter((host) => host !== '' && host !== '.');
    const hosts = exchanges.length > 0 ? exchanges : [domain];
    const addresses: string[] = [];
    for (const host of hosts)
      addresses.push(...(await lookup(resolver, host, 'A')), ...(await lookup(resolver, host, 'AAAA')));
    if (addresses.length === 0) return 'here';
    return addresses.some((address) => ours.has(address)) ? 'here' : 'elsewhere';
  };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<MailRouting>((resolve) => {
    timer = setTimeout(() => resolve('here'), DEADLINE_MS);
  });
  try {
    return await Promise.race([ask(), late]);
  } finally {
    clearTimeout(timer);
    resolver.cancel();
  }
}
