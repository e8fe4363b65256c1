// The mail component's tables (mail/component.ts), written whole from the records of the mail
// domains (one per local mail domain: an account's main domain, and its addon and parked domains,
// whose mail goes to the same mailbox): Postfix's domains, mailboxes, senders and aliases, Dovecot's
// logins and users, OpenDKIM's keys and signing table. An account's own login's password is its
// system password (its hash copied from the shadow file); a mailbox the holder made has its own
// (its hash, from the store, in the record), its own quota and its Maildir at
// <home>/mail/<domain>/<local>/Maildir; a forwarder is a Postfix virtual alias.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { giveFile, readParsed, writeFileAtomic } from '../files.ts';
import { shadowPasswords, systemGroupId } from '../passwd.ts';

/** Tables that list the tenants: readable by root and the one service that reads them. */
const TABLE_MODE = 0o640;
/** The owner a suspended account's domain has in the senders table: no login is named so. */
const SUSPENDED_SENDER = 'suspended:';

/** Who reads a table: Postfix (postdrop: sendmail's own part of it), Dovecot or OpenDKIM. */
export type TableReader = 'postfix' | 'postdrop' | 'dovecot' | 'opendkim';

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

export function mailTables(ctx: LinuxContext) {
  const { linux } = ctx;
  /** Each table's path on the system (the real one below the root: `tables`). */
  const tableNames = {
    domains: join(linux.postfixMapDir, 'domains'),
    mailboxes: join(linux.postfixMapDir, 'mailboxes'),
    senders: join(linux.postfixMapDir, 'senders'),
    aliases: join(linux.postfixMapDir, 'aliases'),
    localSenders: join(linux.postfixMapDir, 'local-senders'),
    localAliases: join(linux.postfixMapDir, 'local-aliases'),
    logins: join(linux.dovecotMapDir, 'logins'),
    users: join(linux.dovecotMapDir, 'users'),
    keys: join(linux.opendkimMapDir, 'keys'),
    signing: join(linux.opendkimMapDir, 'signing'),
  };
  const tables = Object.fromEntries(
    Object.entries(tableNames).map(([name, path]) => [name, ctx.path(path)]),
  ) as typeof tableNames;

  function records(): MailDomain[] {
    const dir = ctx.path(linux.mailDir);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort()
      .flatMap((name) => readParsed(join(dir, name), (text) => JSON.parse(text) as MailDomain) ?? []);
  }

  /**
   * Every table, written whole from the records; `hashes` stands for the shadow file's hash of the
   * users it names. Answers the readers (the tables' groups) of the tables whose content changed.
   */
  function writeTables(hashes: ReadonlyMap<string, string> = new Map()): Set<TableReader> {
    const changed = new Set<TableReader>();
    const all = records();
    const lines = (make: (d: MailDomain) => string[], from = all) =>
      from
        .flatMap(make)
        .map((line) => `${line}\n`)
        .join('');
    const quota = (d: MailDomain) => {
      const { quota: mb } = mainOf(d);
      return mb === null ? '' : `userdb_quota_rule=*:storage=${mb}M`;
    };
    const main = all.filter((d) => d.kind === undefined);
    /** The logins of one domain: the user name goes with the main domain's alone. */
    const logins = (d: MailDomain) =>
      d.kind === undefined ? [d.user, `${d.user}@${d.domain}`] : [`${d.user}@${d.domain}`];
    // Each account's records, found once: a table costs one pass over the records, not one per record.
    const mainByUser = new Map<string, MailDomain>();
    for (const d of main) if (!mainByUser.has(d.user)) mainByUser.set(d.user, d);
    const byUser = new Map<string, MailDomain[]>();
    for (const d of [...main, ...all.filter((d) => d.kind !== undefined)]) {
      const list = byUser.get(d.user);
      if (list) list.push(d);
      else byUser.set(d.user, [d]);
    }
    /** The account's records, its main domain's first. */
    const ofUser = (user: string) => byUser.get(user) ?? [];
    /** Every login of the account, any of which may send as any of its domains. */
    const accountLogins = memo((user: string) => ofUser(user).flatMap(logins));
    /** What the main domain's record says for the account: its quota and suspension count for every domain. */
    const mainOf = (d: MailDomain) => mainByUser.get(d.user) ?? d;
    const domainsOfUser = (user: string) => ofUser(user).map((d) => `@${d.domain}`);
    writeTable(
      tables.domains,
      lines((d) => [`${d.domain} OK`]),
      'postfix',
    );
    writeTable(
      tables.mailboxes,
      lines((d) => [`${d.user}@${d.domain} OK`, ...safeMailboxes(d).map((m) => `${m.local}@${d.domain} OK`)]),
      'postfix',
    );
    writeTable(
      tables.aliases,
      lines((d) => safeForwarders(d).map((f) => `${f.local}@${d.domain} ${f.to.join(', ')}`)),
      'postfix',
    );
    // A suspended account's domain stays (a hosted domain, guarded on port 25) with no login that
    // may send as it: a submission session opened before the suspension sends nothing more.
    // A mailbox's address is its own login's to send as (and the account's); its login sends as
    // nothing else, since no other entry names it.
    const sendAs = (d: MailDomain, own: string[]) =>
      mainOf(d).suspended ? SUSPENDED_SENDER : [...own, ...accountLogins(d.user)].join(', ');
    writeTable(
      tables.senders,
      lines((d) => [
        ...safeMailboxes(d).map((m) => `${m.local}@${d.domain} ${sendAs(d, [`${m.local}@${d.domain}`])}`),
        `@${d.domain} ${sendAs(d, [])}`,
      ]),
      'postfix',
    );
    // What the account's own programs (PHP's mail(), sendmail in a shell) may give as envelope
    // sender with sendmail -f: its login (which Postfix completes with the host name) or an
    // address of its own domains. postdrop enforces it: it runs as the account, with the group
    // postdrop (set-group-id), which alone reads the table besides root.
    writeTable(
      tables.localSenders,
      lines((d) => [`${d.user} ${[d.user, ...domainsOfUser(d.user)].join(', ')}`], main),
      'postdrop',
    );
    // Mail to an account's system user (alice@localhost, a bounce to alice@<host name> from its
    // sendmail) goes to its mailbox, under its mail quota and in its home, never to /var/mail,
    // which no quota bounds and every user may list.
    writeTable(
      tables.localAliases,
      lines((d) => [`${d.user} ${d.user}@${d.domain}`], main),
      'postfix',
    );
    // A login's password is the account's system password: its hash, read from the shadow file.
    const shadow = shadowPasswords(ctx.root);
    const hashOf = (d: MailDomain) => hashes.get(d.user) ?? shadow.get(d.user) ?? '!';
    const usable = all.filter((d) => !mainOf(d).suspended && !/^[!*]/.test(hashOf(d)));
    // A mailbox's login is its whole address, with its own password's hash; none while suspended.
    const mailboxLogins = (d: MailDomain) =>
      mainOf(d).suspended
        ? []
        : safeMailboxes(d)
            .filter((m) => SAFE_HASH.test(m.hash))
            .map((m) => `${m.local}@${d.domain}:${m.hash}:::::::user=${m.local}@${d.domain}`);
    writeTable(
      tables.logins,
      lines((d) => logins(d).map((login) => `${login}:${hashOf(d)}:::::::user=${d.user}`), usable) +
        lines(mailboxLogins),
      'dovecot',
    );
    const mailboxUsers = (d: MailDomain) =>
      safeMailboxes(d).map((m) => {
        const home = [d.home, ...mailboxPath(d.domain, m.local)].join('/');
        const rule = m.quota === null ? '' : `userdb_quota_rule=*:storage=${m.quota}M`;
        return `${m.local}@${d.domain}::${d.uid}:${d.gid}::${home}::${rule}`;
      });
    writeTable(
      tables.users,
      lines((d) => [
        ...logins(d).map((login) => `${login}::${d.uid}:${d.gid}::${d.home}::${quota(d)}`),
        ...mailboxUsers(d),
      ]),
      'dovecot',
    );
    const signed = all.filter((d) => d.dkimKey !== null);
    writeTable(
      tables.keys,
      lines((d) => [`default._domainkey.${d.domain} ${d.domain}:default:${d.dkimKey}`], signed),
      'opendkim',
    );
    // OpenDKIM's refile patterns know one wildcard, `*`.
    writeTable(
      tables.signing,
      lines((d) => [`*@${d.domain} default._domainkey.${d.domain}`], signed),
      'opendkim',
    );
    return changed;

    /** A table, root's and readable by the group of the service that reads it (when it has one here). */
    function writeTable(file: string, content: string, readers: TableReader): void {
      if (readParsed(file, (text) => text) !== content) {
        writeFileAtomic(file, content, TABLE_MODE);
        changed.add(readers);
      }
      const gid = systemGroupId(ctx.root, readers);
      if (gid !== undefined) giveFile(file, 0, gid);
    }
  }

  /** `make`, computed once per argument. */
  function memo<T>(make: (key: string) => T): (key: string) => T {
    const made = new Map<string, T>();
    return (key) => {
      if (!made.has(key)) made.set(key, make(key));
      return made.get(key)!;
    };
  }

  return { tableNames, tables, records, writeTables };
}
