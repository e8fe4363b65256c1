// What the mail tables say of one account (tables.ts writes them): its lines of each table, made
// from the records of its mail domains (one per local mail domain: its main domain, and its addon
// and parked domains, whose mail goes to the same mailbox). An account's own login's password is its
// system password (its hash copied from the shadow file); a mailbox the holder made has its own
// (its hash, from the store, in the record), its own quota and its Maildir at
// <home>/mail/<domain>/<local>/Maildir; a forwarder is a Postfix virtual alias.

/** Who reads a table file and takes it again when reloaded: Postfix (the lists') or OpenDKIM. */
export type TableReader = 'postfix' | 'opendkim';

/** A mailbox of the domain the holder made: `<local>@<domain>`, logging in with its own password. */
export interface MailboxEntry {
  local: string;
  /** SHA-512 crypt. */
  hash: string;
  /** In MB, or null for none. */
  quota: number | null;
}

/** A forwarder of the domain: mail to `<local>@<domain>` goes to each of `to`. */
export interface ForwarderEntry {
  local: string;
  to: string[];
}

/** A mailbox's directory below the account's home (Dovecot's home for it; the Maildir is in it). */
export function mailboxPath(domain: string, local: string): string[] {
  return ['mail', domain, local];
}

/** What a name in the tables may be: nothing that ends a field, a line or a list there. */
const SAFE_LOCAL = /^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$/;
const SAFE_ADDRESS = /^[^\s,:#"\\]+@[a-z0-9.-]+$/i;
const SAFE_HASH = /^\$6\$[A-Za-z0-9./$=]+$/;

/** The mailboxes of a record the tables can take (a record from elsewhere is not trusted blindly). */
function safeMailboxes(d: MailDomain): MailboxEntry[] {
  return (d.mailboxes ?? []).filter((m) => SAFE_LOCAL.test(m.local) && !m.local.includes('..'));
}

function safeForwarders(d: MailDomain): ForwarderEntry[] {
  return (d.forwarders ?? []).filter(
    (f) => SAFE_LOCAL.test(f.local) && f.to.length > 0 && f.to.every((to) => SAFE_ADDRESS.test(to)),
  );
}

/** What the tables say about one mail domain. */
export interface MailDomain {
  user: string;
  domain: string;
  /**
   * An addon or parked domain of the account: its mail goes to the same mailbox, and its logins
   * are the account's. Absent for the main domain (and in records written before).
   */
  kind?: 'addon' | 'parked';
  uid: number;
  gid: number;
  home: string;
  /** The mailbox quota in MB, or null for none. */
  quota: number | null;
  suspended: boolean;
  /** The private key OpenDKIM signs the domain's mail with, or null when it is not signed. */
  dkimKey: string | null;
  /** The holder's mailboxes and forwarders at the domain (absent in records written before). */
  mailboxes?: MailboxEntry[];
  forwarders?: ForwarderEntry[];
}

/**
 * The tables: Postfix's, which Berth serves it from memory (socketmap.ts), but local-senders, a
 * file postdrop reads; OpenDKIM's, files; the files by their names in `tableNames`; Dovecot's,
 * rows of its database.
 */
export type TableName =
  | 'domains'
  | 'mailboxes'
  | 'senders'
  | 'aliases'
  | 'localSenders'
  | 'localAliases'
  | 'logins'
  | 'users'
  | 'keys'
  | 'signing';

/** The tables Postfix asks Berth for, each `key value` a line. */
export type PostfixTable = 'domains' | 'mailboxes' | 'senders' | 'aliases' | 'localAliases';

export const POSTFIX_TABLES: readonly PostfixTable[] = [
  'domains',
  'mailboxes',
  'senders',
  'aliases',
  'localAliases',
];

/**
 * The tables that are files: local-senders, which postdrop (a process of its own for every message
 * sendmail takes) reads whole when it starts, and OpenDKIM's, which it reads again when reloaded.
 */
export type FileTable = 'localSenders' | 'keys' | 'signing';

/** Who reads each table file, and reads it again only when reloaded (null: every time). */
export const READERS: Record<FileTable, { group: string; reloaded: TableReader | null }> = {
  localSenders: { group: 'postdrop', reloaded: null },
  keys: { group: 'opendkim', reloaded: 'opendkim' },
  signing: { group: 'opendkim', reloaded: 'opendkim' },
};

/**
 * One account's lines of each table (its records in the order of their file names), the logins
 * in two parts: the account's own logins, and its mailboxes'.
 */
export type AccountLines = Record<Exclude<TableName, 'logins'> | 'ownLogins' | 'mailboxLogins', string>;

/** The parts of the account's lines each table is made of. */
export const PARTS: Record<TableName, (keyof AccountLines)[]> = {
  domains: ['domains'],
  mailboxes: ['mailboxes'],
  senders: ['senders'],
  aliases: ['aliases'],
  localSenders: ['localSenders'],
  localAliases: ['localAliases'],
  logins: ['ownLogins', 'mailboxLogins'],
  users: ['users'],
  keys: ['keys'],
  signing: ['signing'],
};

/**
 * What the tables say of one account, from its records (every one of them has its user, in the
 * order of their file names) and its password's hash as the shadow file has it.
 */
export function accountLines(records: MailDomain[], hash: string): AccountLines {
  const lines = (from: MailDomain[], make: (d: MailDomain) => string[]) =>
    from
      .flatMap(make)
      .map((line) => `${line}\n`)
      .join('');
  const main = records.filter((d) => d.kind === undefined);
  /** The account's records, its main domain's first. */
  const mainFirst = [...main, ...records.filter((d) => d.kind !== undefined)];
  /** What the main domain's record says for the account: its quota and suspension count for every domain. */
  const mainOf = (d: MailDomain) => main[0] ?? d;
  const quota = (d: MailDomain) => {
    const { quota: mb } = mainOf(d);
    return mb === null ? '' : `*:storage=${mb}M`;
  };
  /** The logins of one domain: the user name goes with the main domain's alone. */
  const logins = (d: MailDomain) =>
    d.kind === undefined ? [d.user, `${d.user}@${d.domain}`] : [`${d.user}@${d.domain}`];
  /** Every login of the account, any of which may send as any of its domains. */
  const accountLogins = mainFirst.flatMap(logins);
  const domainsOfUser = mainFirst.map((d) => `@${d.domain}`);
  // A mailbox's address is its own login's to send as (and the account's); its login sends as
  // nothing else, since no other entry names it. A suspension leaves the table as it is: its
  // logins go from Dovecot's, so none logs in, and a submission session opened before it sends
  // nothing more (the sender-policy milter asks Dovecot's logins); Postfix is not reloaded for it.
  const sendAs = (own: string[]) => [...own, ...accountLogins].join(', ');
  // A login's password is the account's system password: its hash, from the shadow file.
  // None for a locked password (`!`, `*`) or none at all (`passwd -d`): no login without one.
  const usable = records.filter((d) => !mainOf(d).suspended && hash !== '' && !/^[!*]/.test(hash));
  // A mailbox's login is its whole address, with its own password's hash; none while suspended.
  const mailboxLogins = (d: MailDomain) =>
    mainOf(d).suspended
      ? []
      : safeMailboxes(d)
          .filter((m) => SAFE_HASH.test(m.hash))
          .map((m) => `${m.local}@${d.domain}\t${m.hash}\t${m.local}@${d.domain}`);
  const mailboxUsers = (d: MailDomain) =>
    safeMailboxes(d).map((m) => {
      const home = [d.home, ...mailboxPath(d.domain, m.local)].join('/');
      const rule = m.quota === null ? '' : `*:storage=${m.quota}M`;
      return `${m.local}@${d.domain}\t${d.uid}\t${d.gid}\t${home}\t${rule}`;
    });
  const signed = records.filter((d) => d.dkimKey !== null);
  return {
    domains: lines(records, (d) => [`${d.domain} OK`]),
    mailboxes: lines(records, (d) => [
      `${d.user}@${d.domain} OK`,
      ...safeMailboxes(d).map((m) => `${m.local}@${d.domain} OK`),
    ]),
    aliases: lines(records, (d) => safeForwarders(d).map((f) => `${f.local}@${d.domain} ${f.to.join(', ')}`)),
    senders: lines(records, (d) => [
      ...safeMailboxes(d).map((m) => `${m.local}@${d.domain} ${sendAs([`${m.local}@${d.domain}`])}`),
      `@${d.domain} ${sendAs([])}`,
    ]),
    // What the account's own programs (PHP's mail(), sendmail in a shell) may give as envelope
    // sender with sendmail -f: its login (which Postfix completes with the host name) or an
    // address of its own domains. postdrop enforces it: it runs as the account, with the group
    // postdrop (set-group-id), which alone reads the table besides root.
    localSenders: lines(main, (d) => [`${d.user} ${[d.user, ...domainsOfUser].join(', ')}`]),
    // Mail to an account's system user (alice@localhost, a bounce to alice@<host name> from its
    // sendmail) goes to its mailbox, under its mail quota and in its home, never to /var/mail,
    // which no quota bounds and every user may list.
    localAliases: lines(main, (d) => [`${d.user} ${d.user}@${d.domain}`]),
    // Dovecot's rows (dovecot-db.ts), the fields separated by tabs: a login, its password's hash and
    // the user it is (the account, or the mailbox's address); a login, its uid, gid, home and quota.
    ownLogins: lines(usable, (d) => logins(d).map((login) => `${login}\t${hash}\t${d.user}`)),
    mailboxLogins: lines(records, mailboxLogins),
    users: lines(records, (d) => [
      ...logins(d).map((login) => `${login}\t${d.uid}\t${d.gid}\t${d.home}\t${quota(d)}`),
      ...mailboxUsers(d),
    ]),
    keys: lines(signed, (d) => [`default._domainkey.${d.domain} ${d.domain}:default:${d.dkimKey}`]),
    // OpenDKIM's refile patterns know one wildcard, `*`.
    signing: lines(signed, (d) => [`*@${d.domain} default._domainkey.${d.domain}`]),
  };
}
