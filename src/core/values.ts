// The value rules of the contract (§5). Each parser takes the raw text of one parameter and returns
// the canonical value, or throws invalid_parameter naming the parameter and the rule it breaks.
import { isIP } from 'node:net';
import { domainToASCII, domainToUnicode } from 'node:url';
import { normalizeAddress } from '../auth/access.ts';
import { invalid } from './errors.ts';

/** A limit: a whole number, or null for `unlimited`. */
export type Limit = number | null;

export const MAX_LIMIT = 2_147_483_647;

export const RESERVED_USERS: ReadonlySet<string> = new Set([
  'root',
  'admin',
  'administrator',
  'all',
  'nobody',
  'www',
  'www-data',
  'mail',
  'ftp',
  'mysql',
  'postgres',
  'named',
  'bin',
  'daemon',
  'sys',
  'sshd',
  'berth',
]);

/**
 * Names a Debian package may create as a system user or group when it is installed later (cron,
 * systemd, D-Bus, polkit, apt, the mail, DNS and ACME services): an account holding one first would
 * own what that package then installs, or make its installation fail.
 */
export const SYSTEM_PACKAGE_USERS: ReadonlySet<string> = new Set([
  'crontab',
  'systemd',
  'messagebus',
  'polkitd',
  '_apt',
  'postfix',
  'dovecot',
  'opendkim',
  'bind',
  'pebble',
]);

/** Whether a system package may claim the name later (those above, and every name beginning systemd). */
export function claimedBySystemPackage(name: string): boolean {
  return SYSTEM_PACKAGE_USERS.has(name) || name.startsWith('systemd');
}

// Tab and newline are control characters too: only `reason` may hold them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
const CONTROL_BUT_TAB_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

export function hasControlCharacters(value: string, allowTabAndNewline = false): boolean {
  return (allowTabAndNewline ? CONTROL_BUT_TAB_NEWLINE : CONTROL).test(value);
}

export function parseUser(param: string, raw: string): string {
  if (!/^[a-z][a-z0-9]{0,15}$/.test(raw)) {
    throw invalid(param, 'a user name is 1 to 16 lower-case letters and digits, starting with a letter');
  }
  if (raw.startsWith('test')) throw invalid(param, 'a user name may not start with "test"');
  if (RESERVED_USERS.has(raw)) throw invalid(param, `"${raw}" is a reserved name`);
  if (claimedBySystemPackage(raw))
    throw invalid(param, `"${raw}" is a name a system package may claim, reserved for it`);
  return raw;
}

/** Syntax of a host name in canonical (lower-case, ASCII) form; the reason it fails, or null. */
function domainSyntaxError(name: string): string | null {
  if (name.length > 253) return 'a domain is at most 253 characters long';
  const labels = name.split('.');
  if (labels.length < 2) return 'a domain has at least two labels, like example.com';
  for (const label of labels) {
    if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(label)) {
      return 'each label is 1 to 63 letters, digits or hyphens, not starting or ending with a hyphen';
    }
  }
  if (/^[0-9]+$/.test(labels[labels.length - 1]!)) return 'the last label may not be all digits';
  const ace = labels.find((label) => label.startsWith('xn--') && !isIdnLabel(label));
  if (ace) return `the label ${ace} is not the punycode form of an internationalized name`;
  return null;
}

/**
 * Whether an `xn--` label is the ASCII form of an internationalized label: it decodes (RFC 3492,
 * with the WHATWG URL standard's IDNA rules, as browsers read it) to a label with a character
 * beyond ASCII, and that label encodes back to exactly this one. `xn--zz` decodes to nothing
 * (domainToUnicode hands it back unchanged); `xn--example-` decodes to the plain `example`.
 */
function isIdnLabel(label: string): boolean {
  const unicode = domainToUnicode(label);
  return unicode !== '' && /\P{ASCII}/u.test(unicode) && domainToASCII(unicode) === label;
}

/** Lower-cases, converts an IDN to punycode and drops a trailing dot; null when that fails. */
function canonicalDomain(raw: string): string | null {
  let name = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  name = name.toLowerCase();
  if (!/^[\x21-\x7e]*$/.test(name)) {
    // domainToASCII accepts things a DNS label cannot hold; the syntax check below decides.
    const ascii = domainToASCII(name);
    if (ascii === '') return null;
    name = ascii;
  }
  return name;
}

/** The names of the server itself, which no account may take: its host name and name servers. */
export interface ServerNames {
  hostName: string;
  nameservers: readonly string[];
}

/** Whether `name` is `other` or lies under it (`www.shop.example` lies under `shop.example`). */
export function isAtOrUnder(name: string, other: string): boolean {
  return name === other || name.endsWith(`.${other}`);
}

/** A domain's labels in reverse order: `www.shop.example` is `example.shop.www`. */
export function reversedName(domain: string): string {
  return domain.split('.').reverse().join('.');
}

/**
 * What a domain that overlaps `domain` looks like: one of `atOrAbove` (`domain` itself, or
 * `shop.example` for `www.shop.example`), or like `under` in SQL (`%.domain`; domains hold only
 * `a-z 0-9 . -`, so the pattern needs no escaping).
 */
export function overlapsOf(domain: string): { atOrAbove: string[]; under: string } {
  const labels = domain.split('.');
  const above = labels.slice(1, -1).map((_, i) => labels.slice(i + 1).join('.'));
  return { atOrAbove: [domain, ...above], under: `%.${domain}` };
}

export function parseDomain(param: string, raw: string, server: ServerNames): string {
  const name = canonicalDomain(raw);
  if (name === null) throw invalid(param, 'not a valid domain name');
  const error = domainSyntaxError(name);
  if (error) throw invalid(param, error);
  const hostName = server.hostName.toLowerCase();
  if (isAtOrUnder(name, hostName))
    throw invalid(
      param,
      `the server's own host name ${hostName} and names under it cannot be account domains`,
    );
  const nameserver = server.nameservers.find((ns) => isAtOrUnder(name, ns.toLowerCase()));
  if (nameserver)
    throw invalid(param, `the name server ${nameserver} and names under it cannot be account domains`);
  return name;
}

/** The reason a canonical domain breaks the syntax rules of §5, or null (the driver checks again). */
export function domainError(name: string): string | null {
  return domainSyntaxError(name);
}

export function parseEmail(param: string, raw: string): string {
  if (raw.length > 254) throw invalid(param, 'an e-mail address is at most 254 characters long');
  const at = raw.lastIndexOf('@');
  if (at < 1) throw invalid(param, 'an e-mail address has the form local@domain');
  const local = raw.slice(0, at);
  if (local.length > 64) throw invalid(param, 'the part before @ is at most 64 characters long');
  if (!/^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+$/.test(local) || /^\.|\.$|\.\./.test(local)) {
    throw invalid(
      param,
      "the part before @ holds letters, digits and .!#$%&'*+/=?^_`{|}~- without stray dots",
    );
  }
  const domain = canonicalDomain(raw.slice(at + 1));
  const error = domain === null ? 'not a valid domain name' : domainSyntaxError(domain);
  if (error || domain === null) throw invalid(param, `the domain of the address: ${error}`);
  const address = `${local}@${domain}`;
  if (address.length > 254) throw invalid(param, 'an e-mail address is at most 254 characters long');
  return address;
}

/**
 * An address a mailing list keeps (its owner, a member): any address but one with `/`, which
 * mlmmj, storing members in files by address, cannot take.
 */
export function parseListAddress(param: string, raw: string): string {
  const address = parseEmail(param, raw);
  if (address.includes('/')) throw invalid(param, 'a mailing list takes no address with / before @');
  return address;
}

/** The part before @ of an address Berth makes (a mailbox's, a forwarder's): safe in every mail table. */
const MAIL_LOCAL = /^[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?$/;

/**
 * An address an account holder makes (a mailbox, a forwarder): an e-mail address whose part before @
 * is lower-case letters, digits and . _ - (any case given is lowered), starting and ending with a
 * letter or digit, no two dots together: a name every mail table and a directory take as it is.
 */
export function parseMailAddress(param: string, raw: string): string {
  const address = parseEmail(param, raw);
  const at = address.lastIndexOf('@');
  const local = address.slice(0, at).toLowerCase();
  if (!MAIL_LOCAL.test(local) || local.includes('..'))
    throw invalid(
      param,
      'the part before @ is 1 to 64 letters, digits and . _ -, starting and ending with a letter or digit, no two dots together',
    );
  return `${local}${address.slice(at)}`;
}

/** The most addresses a forwarder sends to. */
const MAX_DESTINATIONS = 20;

/** One to 20 e-mail addresses, comma-separated (spaces around them allowed), each once. */
export function parseAddressList(param: string, raw: string): string[] {
  const parts = raw.split(',').map((part) => part.trim());
  if (parts.some((part) => part === ''))
    throw invalid(param, 'one or more e-mail addresses, comma-separated, none empty');
  if (parts.length > MAX_DESTINATIONS) throw invalid(param, `at most ${MAX_DESTINATIONS} addresses`);
  const addresses = parts.map((part) => parseEmail(param, part));
  return [...new Set(addresses)];
}

/** Package names; user names are a subset, so the audit log's target is checked against it. */
export const PACKAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;

export function parsePackageName(param: string, raw: string): string {
  if (!PACKAGE_NAME.test(raw)) {
    throw invalid(
      param,
      'a package name is 1 to 64 letters, digits, spaces, _ . or -, starting with a letter or digit',
    );
  }
  return raw;
}

export function parseLimit(param: string, raw: string): Limit {
  if (raw.toLowerCase() === 'unlimited') return null;
  if (!/^[0-9]+$/.test(raw))
    throw invalid(param, 'a limit is "unlimited" or a whole number from 0 to 2147483647');
  const digits = raw.replace(/^0+(?=.)/, '');
  if (digits.length > 10 || Number(digits) > MAX_LIMIT) {
    throw invalid(param, 'a limit is "unlimited" or a whole number from 0 to 2147483647');
  }
  return Number(digits);
}

export function formatLimit(limit: Limit): string {
  return limit === null ? 'unlimited' : String(limit);
}

const SWITCH_ON = new Set(['on', '1', 'yes', 'true']);
const SWITCH_OFF = new Set(['off', '0', 'no', 'false']);

export function parseSwitch(param: string, raw: string): boolean {
  const word = raw.toLowerCase();
  if (SWITCH_ON.has(word)) return true;
  if (SWITCH_OFF.has(word)) return false;
  throw invalid(param, 'a switch is on or off (also 1/0, yes/no, true/false)');
}

export function formatSwitch(value: boolean): 'on' | 'off' {
  return value ? 'on' : 'off';
}

/** Whether a text has a length a password may have: 8 to 128 characters. */
export function passwordLengthOk(raw: string): boolean {
  if (raw.length > 128 * 2) return false; // more UTF-16 units than 128 characters can take
  const length = [...raw].length;
  return length >= 8 && length <= 128;
}

/** A name a holder gives a thing of its own (an API token): as a package's name. */
export function parseObjectName(param: string, raw: string): string {
  if (!PACKAGE_NAME.test(raw))
    throw invalid(
      param,
      'a name is 1 to 64 letters, digits, spaces, _ . or -, starting with a letter or digit',
    );
  return raw;
}

export function parsePassword(param: string, raw: string): string {
  if (!passwordLengthOk(raw)) throw invalid(param, 'a password is 8 to 128 characters long');
  if (hasControlCharacters(raw)) throw invalid(param, 'a password may not hold control characters');
  return raw;
}

export function parseReason(param: string, raw: string): string {
  if ([...raw].length > 1000) throw invalid(param, 'a reason is at most 1000 characters long');
  return raw;
}

export function parseLanguage(param: string, raw: string): string {
  if (!/^[a-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})?$/.test(raw)) {
    throw invalid(param, 'a language is a code such as en, de or pt_BR');
  }
  return raw;
}

/** A server of the fleet (CONTRACT §12), as `node_name` is written; whether it exists is checked later. */
export function parseServerName(param: string, raw: string): string {
  if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(raw)) {
    throw invalid(
      param,
      'a server name is 1 to 63 lower-case letters, digits and -, not starting or ending with -',
    );
  }
  return raw;
}

export function parseTheme(param: string, raw: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(raw)) {
    throw invalid(
      param,
      'a theme name is 1 to 64 letters, digits, _ . or -, starting with a letter or digit',
    );
  }
  return raw;
}

export function parseFeatureList(param: string, raw: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(raw)) {
    throw invalid(
      param,
      'a feature list name is 1 to 64 letters, digits, _ . or -, starting with a letter or digit',
    );
  }
  return raw;
}

export function parseMailServer(param: string, raw: string): 'local' | 'remote' {
  const word = raw.toLowerCase();
  if (word === 'local' || word === 'remote') return word;
  throw invalid(param, 'mailserver is local or remote');
}

/** The kinds of domain an account holder adds (CONTRACT §14). */
export type AddedDomainType = 'addon' | 'parked' | 'subdomain';

export function parseDomainType(param: string, raw: string): AddedDomainType {
  const word = raw.toLowerCase();
  if (word === 'addon' || word === 'parked' || word === 'subdomain') return word;
  throw invalid(param, 'it is addon, parked or subdomain');
}

/** One directory name of a document root: no `.` or `..`, no hidden name, no slash. */
const DOCROOT_COMPONENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}$/;
/**
 * The top-level directories of a home that are not the account's to serve from: its mail, the
 * jail a shell runs in (root's, and made or removed with the shell, whatever is in it), and the
 * logs and temporary files Berth keeps there.
 */
const NOT_SERVED: ReadonlyMap<string, string> = new Map([
  ['Maildir', "holds the account's mail"],
  ['mail', "holds the mail of the account's mailboxes"],
  ...[
    'bin',
    'dev',
    'etc',
    'lib',
    'lib32',
    'lib64',
    'libx32',
    'usr',
    'sbin',
    'proc',
    'sys',
    'run',
    'var',
    'home',
    'root',
  ].map((name) => [name, 'is a directory of the shell’s jail'] as const),
  ['logs', "holds the account's logs"],
  ['tmp', "holds the account's temporary files"],
]);

/**
 * A document root relative to the home, as its directory names: never absolute, never `..`, never
 * a hidden directory, never the home itself or the account's mail. Whether a name on the way is a
 * link is for the server to see when it makes the directory (it refuses to follow one).
 */
export function parseDocroot(param: string, raw: string): string {
  const path = raw.replace(/\/+$/, '');
  if (raw.startsWith('/') || raw.startsWith('~'))
    throw invalid(param, 'it is relative to the home, not absolute');
  if (path === '') throw invalid(param, 'it names a directory below the home');
  if (path.length > 255) throw invalid(param, 'it is longer than 255 characters');
  const components = path.split('/');
  if (components.some((c) => c === '..')) throw invalid(param, 'it may not hold ..');
  const bad = components.find((c) => !DOCROOT_COMPONENT.test(c));
  if (bad !== undefined)
    throw invalid(
      param,
      `${JSON.stringify(bad)} is not a directory name of letters, digits, _ . or - (not starting with a dot)`,
    );
  const reserved = NOT_SERVED.get(components[0]!);
  if (reserved !== undefined) throw invalid(param, `${components[0]} ${reserved}: choose another directory`);
  return components.join('/');
}

export const API_USER_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** The names the audit log gives the portal's administrator and the command line: no API account's. */
export const RESERVED_API_USERS: ReadonlySet<string> = new Set(['root', 'cli']);

export function parseApiUserName(param: string, raw: string): string {
  if (!API_USER_PATTERN.test(raw)) {
    throw invalid(
      param,
      'an API user name is 1 to 32 lower-case letters, digits, _ or -, starting with a letter',
    );
  }
  if (RESERVED_API_USERS.has(raw))
    throw invalid(param, `"${raw}" is reserved for the portal and the command line`);
  return raw;
}

/**
 * How a claimed API user name is written into the audit log before it is verified: as sent when
 * it could be an API account's name, else `?`. Nothing a caller sends can forge a row.
 */
export function auditableApiUser(claimed: string): string {
  return API_USER_PATTERN.test(claimed) && !RESERVED_API_USERS.has(claimed) ? claimed : '?';
}

/**
 * An IPv4/IPv6 address or CIDR range in canonical text form. An IPv4-mapped IPv6 address is the
 * IPv4 address it maps (`::ffff:192.0.2.1` is `192.0.2.1`; `::ffff:192.0.2.0/120` is `192.0.2.0/24`).
 */
export function parseAddressRange(param: string, raw: string): string {
  const [address, bits, extra] = raw.trim().split('/');
  const family = address === undefined ? 0 : isIP(address);
  const max = family === 4 ? 32 : 128;
  const validBits = bits === undefined || (/^[0-9]{1,3}$/.test(bits) && Number(bits) <= max);
  const canonical = family === 0 ? null : normalizeAddress(address!);
  const refuse = () => invalid(param, `"${raw}" is not an IPv4 or IPv6 address or CIDR range`);
  if (canonical === null || extra !== undefined || !validBits) throw refuse();
  if (bits === undefined) return canonical;
  if (family === 6 && isIP(canonical) === 4) {
    if (Number(bits) < 96) throw refuse();
    return `${canonical}/${Number(bits) - 96}`;
  }
  return `${canonical}/${Number(bits)}`;
}
