// The names no account may have as a domain, beyond the value rules of §5 (values.ts): special-use
// names, public suffixes (the Public Suffix List) and the reserved domains of the configuration
// (the big mail and web providers'). createacct and add_domain take a new domain with
// parseNewDomain; a domain an account already has stays removable whatever these say.
import { readFileSync } from 'node:fs';
import { domainToASCII } from 'node:url';
import { invalid } from './errors.ts';
import { isAtOrUnder, parseDomain, type ServerNames } from './values.ts';

/** Debian's copy of the Public Suffix List (package publicsuffix), the default `public_suffix_list`. */
export const PUBLIC_SUFFIX_LIST = '/usr/share/publicsuffix/public_suffix_list.dat';

/**
 * Names that are never a site's on the Internet (RFC 6761, 6762, 7686, 9476; .internal and
 * .localdomain by custom): mail to one is for the machine or network it is sent from. `test` and
 * `example` are special-use too but allowed: test servers and documentation use them.
 */
export const SPECIAL_USE: readonly string[] = [
  'alt',
  'arpa',
  'internal',
  'invalid',
  'local',
  'localdomain',
  'localhost',
  'onion',
];

/**
 * The default `reserved_domains`: the big mail and web providers' domains. An account that had
 * one as an addon or parked domain would have the server deliver (or bounce) locally the mail every
 * other account sends to it.
 */
export const DEFAULT_RESERVED_DOMAINS: readonly string[] = [
  'aol.com',
  'apple.com',
  'facebook.com',
  'gmail.com',
  'gmx.com',
  'gmx.de',
  'gmx.net',
  'google.com',
  'googlemail.com',
  'hotmail.com',
  'icloud.com',
  'live.com',
  'mac.com',
  'mail.com',
  'mail.ru',
  'me.com',
  'microsoft.com',
  'msn.com',
  'outlook.com',
  'proton.me',
  'protonmail.com',
  'web.de',
  'yahoo.com',
  'yandex.com',
  'yandex.ru',
  'zoho.com',
];

/** The Public Suffix List's rules, as lower-case punycode. */
export class PublicSuffixes {
  readonly #plain = new Set<string>();
  /** `*.ck` as `ck`: every name one label under it is a suffix. */
  readonly #wildcard = new Set<string>();
  /** `!www.ck` as `www.ck`: never a suffix, whatever else matches it. */
  readonly #exception = new Set<string>();

  constructor(text: string) {
    for (const line of text.split('\n')) {
      const rule = line.trim().split(/\s/)[0]!;
      if (rule === '' || rule.startsWith('//')) continue;
      const [set, name] = rule.startsWith('!')
        ? [this.#exception, rule.slice(1)]
        : rule.startsWith('*.')
          ? [this.#wildcard, rule.slice(2)]
          : [this.#plain, rule];
      const ascii = domainToASCII(name);
      if (ascii !== '') set.add(ascii);
    }
  }

  /** How many rules it holds. */
  get size(): number {
    return this.#plain.size + this.#wildcard.size + this.#exception.size;
  }

  /**
   * Whether `domain` is itself a public suffix (`co.uk`, `github.io`, `anything.ck`): its
   * prevailing rule (an exception matching it or a name above it, else the longest) is it whole.
   * A name registered under one (`shop.co.uk`) is not.
   */
  isSuffix(domain: string): boolean {
    const labels = domain.split('.');
    const ancestors = labels.map((_, i) => labels.slice(i).join('.'));
    if (ancestors.some((name) => this.#exception.has(name))) return false;
    return this.#plain.has(domain) || this.#wildcard.has(ancestors[1] ?? '');
  }
}

const loaded = new Map<string, PublicSuffixes | { problem: string }>();

/** The list at `path`, read once; or why it cannot be used (`berth doctor` says so). */
export function publicSuffixesAt(path: string): PublicSuffixes | { problem: string } {
  let list = loaded.get(path);
  if (!list) {
    try {
      list = new PublicSuffixes(readFileSync(path, 'utf8'));
      if (list.size === 0) list = { problem: `${path} holds no rule` };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      list = { problem: code === 'ENOENT' ? `${path} is missing` : `${path} cannot be read (${code})` };
    }
    loaded.set(path, list);
  }
  return list;
}

/** What decides whether a new domain may be an account's: the server's names and these. */
export interface DomainRules extends ServerNames {
  reservedDomains: readonly string[];
  publicSuffixList: string;
}

/**
 * A domain a new account or a holder's add_domain takes: the value rules of §5, then none of the
 * special-use names, reserved domains or public suffixes (when the list cannot be read, that rule
 * alone is skipped; `berth doctor` reports it).
 */
export function parseNewDomain(param: string, raw: string, rules: DomainRules): string {
  const name = parseDomain(param, raw, rules);
  const special = SPECIAL_USE.find((tld) => isAtOrUnder(name, tld));
  if (special)
    throw invalid(param, `.${special} is a special-use name, never a site's or mail domain on the Internet`);
  const reserved = rules.reservedDomains.find((domain) => isAtOrUnder(name, domain));
  if (reserved)
    throw invalid(
      param,
      `${reserved} and every name under it are reserved (reserved_domains, such as the big mail providers' domains): no account may have them`,
    );
  const suffixes = publicSuffixesAt(rules.publicSuffixList);
  if (suffixes instanceof PublicSuffixes && suffixes.isSuffix(name))
    throw invalid(
      param,
      `${name} is a public suffix, under which others register their names: only a name registered under it can be an account's`,
    );
  return name;
}
