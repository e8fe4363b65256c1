// The mail component (mailserver=local): Postfix accepts the domain's mail and hands it by LMTP to
// Dovecot, which delivers it into the account's ~/Maildir as the account, with mailquota as its
// quota, and serves IMAP; Postfix's submission service takes authenticated mail (Dovecot checks
// the login) and passes it through Berth's sender-policy milter (a login sends only as its own
// domains, envelope and header From alike) and then OpenDKIM, which signs it with the key the zone
// publishes. On port 25 the same milter refuses a hosted domain as sender unless SPF passes. Mail
// from sendmail (PHP's mail()) meets Berth's local milter: no other account's domain in From.
//
// Each local mail domain has a record in mail_dir; every table (Postfix's domains, mailboxes and
// senders, Dovecot's logins and users, OpenDKIM's keys and signing table) is written whole from
// those records, never edited line by line; a login's password is the account's system password
// (its hash copied from the shadow file, readable by Dovecot alone). Postfix, Dovecot and OpenDKIM are
// reloaded once per call. Suspension takes the account's logins out of the logins
// table (and the user component locks the password): nothing can log in, but mail still arrives.
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { type Component, type LinuxContext, type LinuxStep, type Service, strayFiles } from '../context.ts';
import { dkimKeyFile, signsMail } from '../dns/dkim.ts';
import {
  domainFile,
  giveFile,
  makePrivateDirectory,
  readIfExists,
  restoreFile,
  writeFileAtomic,
} from '../files.ts';
import { findSystemUser, shadowPasswords, systemGroupId } from '../passwd.ts';
import { render } from '../templates.ts';
import type { TlsComponent } from '../tls/component.ts';
import { childrenOf, waitFor } from '../wait.ts';
import { DKIM_SOCKET, LOCAL_SOCKET, type Milters, POLICY_SOCKET, startMilters } from './milters.ts';
import { ORIGINATING } from './sender-policy.ts';

const MAILDIR_MODE = 0o700;
/** Tables that list the tenants: readable by root and the one service that reads them. */
const TABLE_MODE = 0o640;
/** The owner a suspended account's domain has in the senders table: no login is named so. */
const SUSPENDED_SENDER = 'suspended:';
/** The records of mail domains, and their directory: root's alone. */
const RECORD_MODE = 0o600;

/** What the tables say about one mail domain. */
interface MailDomain {
  user: string;
  domain: string;
  uid: number;
  gid: number;
  home: string;
  /** The mailbox quota in MB, or null for none. */
  quota: number | null;
  suspended: boolean;
  /** The private key OpenDKIM signs the domain's mail with, or null when it is not signed. */
  dkimKey: string | null;
}

export interface MailComponent extends Component {
  /** Learns what each account has waiting in Postfix's queue (its budget: milters.ts). */
  listQueue(): Promise<void>;
  /** Stops Berth's milters (Postfix then tempfails mail until they are back). */
  close(): Promise<void>;
}

export function mailComponent(ctx: LinuxContext, tls: TlsComponent | null): MailComponent {
  const { linux, config, runner } = ctx;
  const recordFile = (domain: string) => ctx.path(join(linux.mailDir, domainFile(domain, '.json')));
  /** Each table's path on the system (the real one below the root: `tables`). */
  const tableNames = {
    domains: join(linux.postfixMapDir, 'domains'),
    mailboxes: join(linux.postfixMapDir, 'mailboxes'),
    senders: join(linux.postfixMapDir, 'senders'),
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

  // Below another system root there is no service to reload.
  const run = async (argv: string[]) => {
    if (ctx.live && argv.length > 0) await runner.run(argv);
  };
  /**
   * Postfix's processes read the tables when they start: after a reload the old ones end as soon as
   * they are idle, and a new connection meets a new process. One still busy with a client ends
   * after it, taking no other; it is not waited for beyond a moment.
   */
  async function reloadPostfix(): Promise<void> {
    const pidText = readIfExists(ctx.path(linux.postfixPidFile));
    const master = pidText === null ? 0 : Number(pidText.trim());
    const before = master ? childrenOf(master) : [];
    await run(linux.reloadMail);
    if (!master || !ctx.live) return;
    await waitFor(
      'Postfix to take the new tables',
      () => {
        const now = childrenOf(master);
        return before.every((pid) => !now.includes(pid));
      },
      2_000,
    ).catch(() => {});
  }
  // Dovecot's auth notices a changed table only by its time and size (a password changed within
  // the second keeps both), so it is reloaded too; OpenDKIM reads its tables at start.
  const mail: Service = {
    name: 'mail services',
    async reload() {
      await reloadPostfix();
      await run(linux.reloadImap);
      await run(linux.reloadDkim);
    },
  };

  let milters: Milters | null = null;

  function records(): MailDomain[] {
    const dir = ctx.path(linux.mailDir);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort()
      .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as MailDomain);
  }

  /**
   * Every table, written whole from the records; `hashes` stands for the shadow file's hash of the
   * users it names.
   */
  function writeTables(hashes: ReadonlyMap<string, string> = new Map()): void {
    const all = records();
    const lines = (make: (d: MailDomain) => string[], from = all) =>
      from
        .flatMap(make)
        .map((line) => `${line}\n`)
        .join('');
    const quota = (d: MailDomain) => (d.quota === null ? '' : `userdb_quota_rule=*:storage=${d.quota}M`);
    const logins = (d: MailDomain) => [d.user, `${d.user}@${d.domain}`];
    writeTable(
      tables.domains,
      lines((d) => [`${d.domain} OK`]),
      'postfix',
    );
    writeTable(
      tables.mailboxes,
      lines((d) => [`${d.user}@${d.domain} OK`]),
      'postfix',
    );
    // A suspended account's domain stays (a hosted domain, guarded on port 25) with no login that
    // may send as it: a submission session opened before the suspension sends nothing more.
    writeTable(
      tables.senders,
      lines((d) => [`@${d.domain} ${d.suspended ? SUSPENDED_SENDER : logins(d).join(', ')}`]),
      'postfix',
    );
    // What the account's own programs (PHP's mail(), sendmail in a shell) may give as envelope
    // sender with sendmail -f: its login (which Postfix completes with the host name) or an
    // address of its own domains. postdrop enforces it: it runs as the account, with the group
    // postdrop (set-group-id), which alone reads the table besides root.
    writeTable(
      tables.localSenders,
      lines((d) => [`${d.user} ${d.user}, @${d.domain}`]),
      'postdrop',
    );
    // Mail to an account's system user (alice@localhost, a bounce to alice@<host name> from its
    // sendmail) goes to its mailbox, under its mail quota and in its home, never to /var/mail,
    // which no quota bounds and every user may list.
    writeTable(
      tables.localAliases,
      lines((d) => [`${d.user} ${d.user}@${d.domain}`]),
      'postfix',
    );
    // A login's password is the account's system password: its hash, read from the shadow file.
    const shadow = shadowPasswords(ctx.root);
    const hashOf = (d: MailDomain) => hashes.get(d.user) ?? shadow.get(d.user) ?? '!';
    const usable = all.filter((d) => !d.suspended && !/^[!*]/.test(hashOf(d)));
    writeTable(
      tables.logins,
      lines((d) => logins(d).map((login) => `${login}:${hashOf(d)}:::::::user=${d.user}`), usable),
      'dovecot',
    );
    writeTable(
      tables.users,
      lines((d) => logins(d).map((login) => `${login}::${d.uid}:${d.gid}::${d.home}::${quota(d)}`)),
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
  }

  /** A table, root's and readable by the group of the service that reads it (when it has one here). */
  function writeTable(file: string, content: string, readers: string): void {
    writeFileAtomic(file, content, TABLE_MODE);
    const gid = systemGroupId(ctx.root, readers);
    if (gid !== undefined) giveFile(file, 0, gid);
  }

  function recordOf(account: Account): MailDomain {
    const owner = ctx.systemUser(account.user);
    const key = dkimKeyFile(linux.dkimDir, account.domain);
    return {
      user: account.user,
      domain: account.domain,
      uid: owner.uid,
      gid: owner.gid,
      home: account.homedir,
      quota: account.limits.mailquota,
      suspended: account.suspension !== null,
      dkimKey: signsMail(account) && existsSync(ctx.path(key)) ? key : null,
    };
  }

  /** OpenDKIM reads the domain's key as its own user, and refuses a key others may read. */
  function handKeyToOpendkim(record: MailDomain): void {
    if (!record.dkimKey) return;
    const opendkimUser = findSystemUser(ctx.root, 'opendkim');
    if (opendkimUser) giveFile(ctx.path(record.dkimKey), opendkimUser.uid, opendkimUser.gid);
  }

  /** Writes (or, given null, removes) the domain's record and every table, as one undoable step. */
  function recordStep(name: string, account: Account, next: () => MailDomain | null): LinuxStep {
    const file = recordFile(account.domain);
    let before: string | null = null;
    // Undone by writing the tables afresh from the records (other accounts' changes meanwhile stay),
    // with the account's password hash as the tables had it: the shadow file may not be back yet.
    let hashBefore: string | null = null;
    return ctx.step(
      name,
      async () => {
        before = readIfExists(file);
        const prefix = `${account.user}:`;
        const line = readIfExists(tables.logins)
          ?.split('\n')
          .find((l) => l.startsWith(prefix));
        hashBefore = line ? line.slice(prefix.length).split(':')[0]! : null;
        const record = next();
        if (record) handKeyToOpendkim(record);
        restoreFile(file, record && `${JSON.stringify(record, null, 2)}\n`, RECORD_MODE);
        writeTables();
      },
      async () => {
        restoreFile(file, before, RECORD_MODE);
        writeTables(hashBefore === null ? new Map() : new Map([[account.user, hashBefore]]));
      },
      mail,
    );
  }

  const maildirStep = (account: Account) =>
    ctx.step('Maildir', async () => ctx.accountDirectory(account, ['Maildir'], MAILDIR_MODE));

  const local = (account: Account) => account.mailserver === 'local';
  const update = (name: string, account: Account) =>
    local(account) ? [recordStep(name, account, () => recordOf(account))] : [];

  return {
    name: 'mail',
    services: [mail],

    async prepare() {
      makePrivateDirectory(ctx.path(linux.mailDir));
      writeTables();
      if (!ctx.live) return;
      milters ??= await startMilters(ctx, tables);
      const certificate = tls ? tls.hostCertificateFile : '/etc/ssl/certs/ssl-cert-snakeoil.pem';
      writeFileAtomic(
        ctx.path('/etc/dovecot/dovecot.conf'),
        render('mail/dovecot.conf', {
          address: linux.mailAddress,
          imap_port: String(linux.imapPort),
          host_name: config.hostName,
          certificate,
          logins: join(linux.dovecotMapDir, 'logins'),
          users: join(linux.dovecotMapDir, 'users'),
        }),
        0o644,
      );
      writeFileAtomic(
        ctx.path('/etc/opendkim.conf'),
        render('mail/opendkim.conf', {
          socket: join(linux.postfixQueueDir, DKIM_SOCKET),
          keys: join(linux.opendkimMapDir, 'keys'),
          signing: join(linux.opendkimMapDir, 'signing'),
        }),
        0o644,
      );
      const maps = (name: string) => `texthash:${join(linux.postfixMapDir, name)}`;
      await runner.run([
        '/usr/sbin/postconf',
        '-e',
        `virtual_mailbox_domains=${maps('domains')}`,
        `virtual_mailbox_maps=${maps('mailboxes')}`,
        'virtual_transport=lmtp:unix:private/dovecot-lmtp',
        'smtpd_sasl_type=dovecot',
        'smtpd_sasl_path=private/auth',
        `smtpd_tls_cert_file=${certificate}`,
        `smtpd_tls_key_file=${certificate}`,
        'smtpd_tls_security_level=may',
        // Port 25: a hosted domain as sender only when SPF passes (the sender-policy milter).
        `smtpd_milters=unix:${POLICY_SOCKET}`,
        // A milter that does not answer holds mail back (the client tries again), never lets it by.
        'milter_default_action=tempfail',
        // The queue is root's to read and flush: its envelopes name every tenant's correspondents.
        'authorized_mailq_users=root',
        'authorized_flush_users=root',
        // Local mail to an account's user goes to its mailbox (local-aliases), the system's as before.
        `alias_maps=hash:/etc/aliases, ${maps('local-aliases')}`,
        // A system user's /var/mail file (root's, www-data's) is bounded: Postfix's own default, which
        // Debian lifts; any program of the server, an account's PHP among them, may write to them.
        'mailbox_size_limit=52428800',
        // Delivery notices on port 25 would wait for days for a sender no account owns, outside every
        // account's budget: not offered there (submission keeps them, counted as the account's).
        'smtpd_discard_ehlo_keywords=silent-discard, dsn',
        // sendmail -f: an account only as itself (local-senders); root and the system's own
        // users (not accounts, not in the table) as before.
        `local_login_sender_maps=${maps('local-senders')}, static:*`,
        // Mail from sendmail: no other account's domain in From, and the account's queue budget
        // (cleanup asks the local milter).
        `non_smtpd_milters=unix:${LOCAL_SOCKET}`,
      ]);
      // master.cf names a service by where it listens: 587 on every address, or ADDRESS:PORT.
      const listen =
        linux.mailAddress === '*'
          ? String(linux.submissionPort)
          : `${linux.mailAddress}:${linux.submissionPort}`;
      const service = `${listen}/inet`;
      await runner.run(['/usr/sbin/postconf', '-M', `${service}=${listen} inet n - y - - smtpd`]);
      // Authenticated clients only, each sending as its own domain (envelope: Postfix, and the
      // milter again; header From: the milter alone), never the null sender, signed on the way out
      // by OpenDKIM, which signs only what carries this service's daemon name.
      await runner.run([
        '/usr/sbin/postconf',
        '-P',
        ...[
          'syslog_name=postfix/submission',
          'smtpd_tls_security_level=encrypt',
          'smtpd_sasl_auth_enable=yes',
          'smtpd_tls_auth_only=yes',
          'smtpd_client_restrictions=permit_sasl_authenticated,reject',
          'smtpd_relay_restrictions=permit_sasl_authenticated,reject',
          `smtpd_sender_login_maps=${maps('senders')}`,
          'smtpd_sender_restrictions=reject_sender_login_mismatch,check_sender_access,inline:{<>=REJECT}',
          `milter_macro_daemon_name=${ORIGINATING}`,
          'smtpd_discard_ehlo_keywords=',
          `smtpd_milters=unix:${POLICY_SOCKET},unix:${DKIM_SOCKET}`,
        ].map((option) => `${service}/${option}`),
      ]);
    },

    async listQueue() {
      await milters?.listQueue();
    },

    async close() {
      const served = milters;
      milters = null;
      await served?.close();
    },

    create: (account) => (local(account) ? [maildirStep(account), ...update('mail domain', account)] : []),
    remove: (account) => (local(account) ? [recordStep('mail domain', account, () => null)] : []),
    suspend: (account) => update('mail logins', account),
    unsuspend: (account) => update('mail logins', account),
    // The user component has set the new hash by now; the logins table takes it.
    changePassword: (account) => update('mail password', account),
    changeLimits: (before, after) =>
      before.limits.mailquota === after.limits.mailquota ? [] : update('mailbox quota', after),

    async reconcile(account) {
      if (!local(account)) return;
      await maildirStep(account).run();
      await recordStep('mail domain', account, () => recordOf(account)).run();
    },
    async purge(account) {
      await recordStep('mail domain', account, () => null).run();
    },

    inspect(accounts) {
      const differences: string[] = [];
      const listed = readIfExists(tables.domains) ?? '';
      const localAccounts = accounts.filter(local);
      for (const account of localAccounts) {
        if (!existsSync(recordFile(account.domain))) differences.push(`${account.user}: no mail domain`);
        else if (!listed.split('\n').includes(`${account.domain} OK`))
          differences.push(`${account.user}: mail domain not in ${join(linux.postfixMapDir, 'domains')}`);
      }
      // What lists the tenants is no account's to read (a table written by an older Berth was).
      const records = existsSync(ctx.path(linux.mailDir))
        ? readdirSync(ctx.path(linux.mailDir)).map((name) => join(linux.mailDir, name))
        : [];
      for (const path of [linux.mailDir, ...records, ...Object.values(tableNames)]) {
        const real = ctx.path(path);
        const mode = lstatSync(real, { throwIfNoEntry: false })?.mode ?? 0;
        if ((mode & 0o007) !== 0)
          differences.push(`${path}: readable by every user (mode 0${(mode & 0o777).toString(8)})`);
      }
      const expected = new Set(localAccounts.map((a) => domainFile(a.domain, '.json')));
      return [...differences, ...strayFiles(ctx, linux.mailDir, expected, '.json', 'mail domain')];
    },
  };
}
