// Who may send as whom (CONTRACT §10): the decisions of Berth's sender-policy milter. On the
// submission service (Postfix's `milter_macro_daemon_name=ORIGINATING`) an authenticated login may
// use, as envelope sender and as the one header From, only an address of a domain its account
// owns, which Postfix's `senders` table says (the table reject_sender_login_mismatch reads: one
// source), and its From may name no other hosted domain anywhere a reader shows it; a null sender
// is refused. Unauthenticated mail on port 25 naming a domain hosted here as envelope or header
// sender, however spelt (header-text.ts), is refused unless SPF passes for that domain and the
// client.
import { Resolver } from 'node:dns/promises';
import { domainToASCII } from 'node:url';
import { spf } from 'mailauth/lib/spf/index.js';
import { readerText } from './header-text.ts';
import { CONTINUE, type Envelope, type MilterPolicy, type Verdict } from './milter.ts';
import type { SenderOwner } from './queue-budget.ts';

/** The daemon name the submission service gives its milters (Postfix's milter_macro_daemon_name). */
export const ORIGINATING = 'ORIGINATING';

/**
 * The headers a mail reader shows as who sent a message: From, and Sender and the Resent- pair
 * ("ceo@bob.example on behalf of …"). Reply-To is not among them: where replies go is the
 * sender's to choose (a form's visitor, a help desk), and a reader shows it only on replying.
 */
const SENDER_HEADERS = new Set(['from', 'sender', 'resent-from', 'resent-sender']);
const senderHeaders = (envelope: Envelope) =>
  envelope.headers.filter((h) => SENDER_HEADERS.has(h.name.trim().toLowerCase()));

/** What the senders table says: for each domain (or whole address), the logins that may use it. */
export interface SenderTable {
  /** The logins that may send as `address` (by its exact entry, else by its domain's). */
  loginsFor(address: string): readonly string[];
  /** Whether the domain is one this server hosts. */
  hosts(domain: string): boolean;
  /** The domains of every entry that names `login` (for a mailbox login, its mailbox's domain). */
  domainsOf(login: string): ReadonlySet<string>;
}

/** Reads Postfix's `senders` table (`@domain login, login` or `address login`, one a line). */
export function parseSenders(text: string): SenderTable {
  const entries = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const [key, ...rest] = trimmed.split(/\s+/);
    const logins = rest
      .join(' ')
      .split(/[\s,]+/)
      .filter(Boolean)
      .map((login) => login.toLowerCase());
    entries.set(key!.toLowerCase(), logins);
  }
  const domainOf = (key: string) => key.slice(key.lastIndexOf('@') + 1);
  const hosted = new Set([...entries.keys()].map(domainOf));
  return {
    loginsFor(address) {
      const lower = address.toLowerCase();
      return entries.get(lower) ?? entries.get(`@${domainOf(lower)}`) ?? [];
    },
    hosts: (domain) => hosted.has(domain.toLowerCase()),
    domainsOf(login) {
      const lower = login.toLowerCase();
      return new Set(
        [...entries].filter(([, logins]) => logins.includes(lower)).map(([key]) => domainOf(key)),
      );
    },
  };
}

/**
 * The addresses of a From header's value (RFC 5322 mailbox-list): display names, quoted strings and
 * comments understood, so that `"ceo@bob.example" <me@alice.example>` is me@alice.example. Null
 * when it is not a plain list of mailboxes (a group, an unclosed quote, comment or bracket, two
 * brackets in one mailbox, words after the bracket): what other software might read differently is
 * not guessed at.
 */
export function fromAddresses(value: string): string[] | null {
  /** One mailbox as read so far: the text outside angle brackets (no comments), and inside them. */
  const mailboxes: { outside: string; inside: string | null; after: string }[] = [];
  let mailbox = { outside: '', inside: null as string | null, after: '' };
  let inAngle = false;
  const add = (text: string) => {
    if (inAngle) mailbox.inside += text;
    else if (mailbox.inside !== null) mailbox.after += text;
    else mailbox.outside += text;
  };
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '"') {
      let j = i + 1;
      for (; j < value.length && value[j] !== '"'; j++) if (value[j] === '\\') j++;
      if (j >= value.length) return null;
      add(value.slice(i, j + 1));
      i = j;
    } else if (c === '(' && !inAngle) {
      let depth = 1;
      let j = i + 1;
      for (; j < value.length && depth > 0; j++) {
        if (value[j] === '\\') j++;
        else if (value[j] === '(') depth++;
        else if (value[j] === ')') depth--;
      }
      if (depth > 0) return null;
      add(' ');
      i = j - 1;
    } else if (c === '<') {
      if (inAngle || mailbox.inside !== null) return null;
      inAngle = true;
      mailbox.inside = '';
    } else if (c === '>') {
      if (!inAngle) return null;
      inAngle = false;
    } else if (c === ',' && !inAngle) {
      mailboxes.push(mailbox);
      mailbox = { outside: '', inside: null, after: '' };
    } else if (':;\\()[]'.includes(c)) return null;
    else add(c);
  }
  if (inAngle) return null;
  mailboxes.push(mailbox);
  const addresses: string[] = [];
  for (const { outside, inside, after } of mailboxes) {
    if (after.trim() !== '') return null;
    // Without brackets the mailbox is one bare address: no display name, nothing else.
    const address = inside === null ? outside.trim() : inside.trim();
    if (/\s/.test(address) || !plainAddress(address)) return null;
    addresses.push(address);
  }
  return addresses;
}

/** local@domain, with a domain of letters, digits, hyphens and dots. */
function plainAddress(address: string): boolean {
  const at = address.lastIndexOf('@');
  return at > 0 && /^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(address.slice(at + 1));
}

/** An address's domain as DNS and Postfix read it: lower case, without a trailing dot. */
export const domainOf = (address: string) =>
  address
    .slice(address.lastIndexOf('@') + 1)
    .toLowerCase()
    .replace(/\.+$/, '');

/**
 * Every domain a header value names after an `@`, however it is spelt: in the raw header and as a
 * reader shows it (encoded-words decoded, full-width and other look-alike forms folded:
 * header-text.ts), comments dropped, spaces around the `@` closed up, a literal's brackets and
 * trailing dots taken off, a Unicode domain in its ASCII form. What a lenient reader might show as
 * the sender is all checked, not only what a strict parser accepts.
 */
export function namedDomains(value: string): string[] {
  const found = new Set<string>();
  for (const spelling of new Set([value, readerText(value)])) {
    let text = spelling;
    for (let before = ''; before !== text; ) {
      before = text;
      text = text.replace(/\([^()]*\)/g, ' ');
    }
    text = text.replace(/\s+/g, '');
    for (const match of text.matchAll(/@\[?([\p{L}\p{M}\p{N}.-]+)/gu)) {
      const domain = match[1]!.toLowerCase();
      found.add(domainOf(`@${domainToASCII(domain) || domain}`));
    }
  }
  return [...found];
}

export interface SenderPolicyOptions {
  /** The senders table as it is now (read afresh: the mail component rewrites it on every change). */
  senders(): SenderTable;
  /**
   * Whether `login` (Postfix's SASL user name: an account's user or a mailbox's address) may log
   * in now: listed in Dovecot's logins, which a suspension or removal takes it out of. A session
   * that logged in before sends nothing more once it may not.
   */
  mayLogIn(login: string): boolean;
  /** Whether SPF passes for `sender` (an address) from `ip`, which said `helo`. */
  spfPasses(sender: string, ip: string, helo: string): Promise<'pass' | 'fail' | 'temperror'>;
  /**
   * Whether `ip` is one of this server's own addresses: a client there is a program of the server
   * (an account's PHP among them), which SPF cannot tell from another account's.
   */
  isOwnAddress(ip: string): boolean;
}

const refuse = (reply: string): Verdict => ({ action: 'reject', reply });

/** Whether the mail came by submission (or with a login): an account's, not another server's. */
export const submitted = (envelope: Envelope) =>
  envelope.macros.get('daemon_name') === ORIGINATING || (envelope.macros.get('auth_authen') ?? '') !== '';

export function senderPolicy(options: SenderPolicyOptions): MilterPolicy {
  const mayUse = (login: string, address: string) =>
    options.senders().loginsFor(address).includes(login.toLowerCase());

  /**
   * Port 25: each hosted domain among `domains` must pass SPF for the client, and a client at one
   * of the server's own addresses may name none: the server's own programs send through
   * submission or sendmail, where the account is known, and every account's SPF allows the
   * server's address.
   */
  async function spfFor(envelope: Envelope, domains: string[], what: string): Promise<Verdict> {
    const table = options.senders();
    for (const domain of new Set(domains)) {
      if (!table.hosts(domain)) continue;
      if (options.isOwnAddress(envelope.clientAddress))
        return refuse(
          `550 5.7.23 ${what} ${domain} is hosted here: from this server, send through submission`,
        );
      const result = await options.spfPasses(`postmaster@${domain}`, envelope.clientAddress, envelope.helo);
      if (result === 'temperror')
        return { action: 'tempfail', reply: `451 4.7.24 SPF of ${domain} cannot be checked now` };
      if (result !== 'pass')
        return refuse(`550 5.7.23 ${what} ${domain} is hosted here and SPF does not pass for you`);
    }
    return CONTINUE;
  }

  return {
    async mailFrom(envelope) {
      const sender = envelope.sender ?? '';
      if (!submitted(envelope))
        return sender === '' ? CONTINUE : spfFor(envelope, [domainOf(sender)], 'sender domain');
      const login = envelope.macros.get('auth_authen') ?? '';
      if (login === '') return refuse('530 5.7.0 Authentication required');
      if (!options.mayLogIn(login)) return refuse(`550 5.7.1 ${login} may no longer log in`);
      if (sender === '') return refuse('550 5.7.1 A null sender is not accepted from a login');
      if (!mayUse(login, sender)) return refuse(`553 5.7.1 ${login} may not send as <${sender}>`);
      return CONTINUE;
    },

    async endOfMessage(envelope) {
      const froms = envelope.headers.filter((h) => h.name.trim().toLowerCase() === 'from');
      if (!submitted(envelope)) {
        // What a reader may see as the sender: every domain any sender header names, however spelt.
        return spfFor(
          envelope,
          senderHeaders(envelope).flatMap((h) => namedDomains(h.value)),
          'header From domain',
        );
      }
      const login = envelope.macros.get('auth_authen') ?? '';
      if (!options.mayLogIn(login)) return refuse(`550 5.7.1 ${login} may no longer log in`);
      if (froms.length !== 1)
        return refuse(`550 5.7.1 A message needs exactly one From header (${froms.length})`);
      const addresses = fromAddresses(froms[0]!.value);
      if (addresses?.length !== 1 || !addresses)
        return refuse('550 5.7.1 The From header must name exactly one plain address');
      if (login === '' || !mayUse(login, addresses[0]!))
        return refuse(`550 5.7.1 ${login} may not send as From <${addresses[0]}>`);
      // Nor name another account's domain anywhere a reader shows it: a display name
      // `"ceo@bob.example"`, an encoded-word, a full-width ＠.
      const table = options.senders();
      const own = table.domainsOf(login);
      for (const header of senderHeaders(envelope)) {
        const other = namedDomains(header.value).find((domain) => table.hosts(domain) && !own.has(domain));
        if (other !== undefined)
          return refuse(`550 5.7.1 ${login} may not name ${other} in ${header.name.trim()}`);
      }
      return CONTINUE;
    },
  };
}

/**
 * Mail the account's own programs hand to sendmail (PHP's mail()), which cleanup asks the local
 * milter about. Its envelope sender is the account's (postdrop holds it to local-senders), and no
 * From header may name, anywhere a reader shows it, a domain hosted here that is another
 * account's: such mail is not signed, but Berth delivers it into that account's own mailboxes, and
 * a reader shows the From. Domains hosted elsewhere (a contact form's visitor@gmail.com) are not
 * Berth's to guard; the mail of root and of the system's own users, no account's, is not checked.
 * Refused, Postfix returns the message to its sender.
 */
export function localSenderPolicy(owners: () => SenderOwner): MilterPolicy {
  return {
    mailFrom: () => CONTINUE,
    endOfMessage(envelope) {
      const owner = owners();
      const login = envelope.sender ? owner(envelope.sender) : null;
      if (login === null) return CONTINUE;
      for (const header of senderHeaders(envelope))
        for (const domain of namedDomains(header.value)) {
          const holder = owner(`@${domain}`);
          if (holder !== null && holder !== login)
            return refuse(
              `550 5.7.1 Mail of ${login} may not name ${domain} in ${header.name.trim()}: it is another account's`,
            );
        }
      return CONTINUE;
    },
  };
}

/**
 * SPF through mailauth (RFC 7208), asking `dnsServer` (`host:port`, or the system's resolvers when
 * empty): only `pass` lets a hosted domain in; a DNS failure is `temperror` (the client tries again).
 */
export function spfChecker(dnsServer: string, hostName: string): SenderPolicyOptions['spfPasses'] {
  const resolver = new Resolver({ timeout: 3_000, tries: 2 });
  if (dnsServer !== '') resolver.setServers([dnsServer]);
  const resolve = (name: string, type: string) => resolver.resolve(name, type) as Promise<never>;
  return async (sender, ip, helo) => {
    const result = await spf({ sender, ip, helo, mta: hostName, resolver: resolve, maxElapsedTime: 10_000 });
    const status = result.status.result;
    return status === 'pass' ? 'pass' : status === 'temperror' ? 'temperror' : 'fail';
  };
}
