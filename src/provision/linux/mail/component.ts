// The mail component (mailserver=local): Postfix accepts the domain's mail and hands it by LMTP to
// Dovecot, which delivers it into the account's ~/Maildir as the account, with mailquota as its
// quota, and serves IMAP; Postfix's submission service takes authenticated mail (Dovecot checks
// the login) and passes it through Berth's sender-policy milter (a login sends only as its own
// domains, envelope and header From alike) and then OpenDKIM, which signs it with the key the zone
// publishes. On port 25 the same milter refuses a hosted domain as sender unless SPF passes. Mail
// from sendmail (PHP's mail()) meets Berth's local milter: no other account's domain in From.
//
// Each local mail domain (the main domain, and each addon and parked domain, whose mail goes to the
// same mailbox: tables.ts) has a record in mail_dir, and every table comes from those records alone
// (each account's lines kept in memory, made afresh when one of its records changes): Postfix's
// domains, mailboxes, senders and aliases served to it from memory (socketmap.ts), OpenDKIM's keys
// and signing table written whole, never edited line by line; Dovecot's logins and users as the
// account's rows of its database (dovecot-db.ts). A login's password is the account's system
// password (its hash copied from the shadow file, readable by Dovecot alone). Postfix asks for
// its tables on every lookup and Dovecot for its rows, so neither is reloaded for a change;
// OpenDKIM, when its tables changed, is reloaded once per call (reloads.ts). Suspension takes the account's
// logins out of the logins table (and the user component locks the password): nothing can log in,
// but mail still arrives.
//
// The holder's mailboxes and forwarders (mailboxes.ts) are in the record of their domain: a
// mailbox logs in with its whole address and its own password, has its own quota and its Maildir
// under the account's home; a forwarder is a Postfix virtual alias.
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { StepRefused } from '../../driver.ts';
import { type Component, type LinuxContext, type LinuxStep, sitesOf, strayFiles } from '../context.ts';
import { dkimKeyFile, signsMail } from '../dns/dkim.ts';
import {
  domainFile,
  giveFile,
  makePrivateDirectory,
  readIfExists,
  removeFile,
  writeFileAtomic,
} from '../files.ts';
import { findSystemUser, systemGroupId } from '../passwd.ts';
import { render } from '../templates.ts';
import type { TlsComponent } from '../tls/component.ts';
import { dovecotQueries } from './dovecot-db.ts';
import type { MailDomain } from './lines.ts';
import { mailAt, mailboxSteps, mailChanged, removedMailboxes } from './mailboxes.ts';
import type { MilterPolicy } from './milter.ts';
import { DKIM_SOCKET, type Milters, startMilters } from './milters.ts';
import { configurePostfix } from './postfix.ts';
import { mailReloads } from './reloads.ts';
import { serveTables } from './socketmap.ts';
import { dovecotDatabasePath, mailTables } from './tables.ts';

const MAILDIR_MODE = 0o700;
const DOVECOT_SQLITE = '/usr/lib/dovecot/modules/libdriver_sqlite.so';
/** The records of mail domains, and their directory: root's alone. */
const RECORD_MODE = 0o600;

export interface MailComponent extends Component {
  /** Notes a table of Postfix's another component wrote (the lists'): Postfix reloads for it. */
  postfixTableWritten(): void;
  /** Postfix takes the settings every component gave it: once, when Berth starts. */
  reloadSettings(): Promise<void>;
  /** Serves one more milter of Berth's (Milters.serve); nothing below another system root. */
  serveMilter(name: string, policy: MilterPolicy, lists?: () => Iterable<string>): Promise<void>;
  /** Learns what each account has waiting in Postfix's queue (its budget: milters.ts). */
  listQueue(): Promise<void>;
  /** Stops Berth's milters (Postfix then tempfails mail until they are back). */
  close(): Promise<void>;
}

export function mailComponent(ctx: LinuxContext, tls: TlsComponent | null): MailComponent {
  const { linux, config, runner } = ctx;
  const recordFile = (domain: string) => ctx.path(join(linux.mailDir, domainFile(domain, '.json')));
  const { tableNames, database, records, writeTables, putRecord, loginHash, lookup, text } = mailTables(ctx);
  const { service: mail, tablesWritten } = mailReloads(ctx);
  const mailboxes = mailboxSteps(ctx);
  /** Where Dovecot's sql driver finds the database and its queries. */
  const dovecotQueryFile = join(linux.dovecotMapDir, 'sql.conf');

  let milters: Milters | null = null;
  let served: { close(): Promise<void> } | null = null;

  /**
   * The record of one mail domain of the account: its main domain, or (`site`) an addon or parked
   * domain, whose mail is signed with the account's key (each of its zones publishes it). Its
   * mailboxes and forwarders are the objects' when given, else as the record has them now.
   */
  function recordOf(
    account: Account,
    site?: { domain: string; kind: 'addon' | 'parked' },
    objects?: AccountObjects,
  ): MailDomain {
    const owner = ctx.systemUser(account.user);
    const key = dkimKeyFile(linux.dkimDir, account.domain);
    const domain = site?.domain ?? account.domain;
    const now = objects ? null : readIfExists(recordFile(domain));
    const kept = now === null ? null : (JSON.parse(now) as MailDomain);
    const mail = objects
      ? mailAt(domain, objects)
      : { mailboxes: kept?.mailboxes ?? [], forwarders: kept?.forwarders ?? [] };
    return {
      user: account.user,
      domain: site?.domain ?? account.domain,
      ...(site && { kind: site.kind }),
      uid: owner.uid,
      gid: owner.gid,
      home: account.homedir,
      quota: account.limits.mailquota,
      suspended: account.suspension !== null,
      dkimKey: signsMail(account) && existsSync(ctx.path(key)) ? key : null,
      ...mail,
    };
  }

  /** OpenDKIM reads the domain's key as its own user, and refuses a key others may read. */
  function handKeyToOpendkim(record: MailDomain): void {
    if (!record.dkimKey) return;
    const opendkimUser = findSystemUser(ctx.root, 'opendkim');
    if (opendkimUser) giveFile(ctx.path(record.dkimKey), opendkimUser.uid, opendkimUser.gid);
  }

  /** Writes (or, given null, removes) the domain's record and the tables it changes, as one undoable step. */
  function recordStep(
    name: string,
    account: Account,
    next: () => MailDomain | null,
    domain = account.domain,
  ): LinuxStep {
    const file = recordFile(domain);
    let before: string | null = null;
    // Undone by writing the tables afresh from the records (other accounts' changes meanwhile stay),
    // with the account's password hash as the tables had it: the shadow file may not be back yet.
    let hashBefore: string | null = null;
    return ctx.step(
      name,
      async () => {
        before = readIfExists(file);
        hashBefore = loginHash(account.user);
        const record = next();
        if (record) handKeyToOpendkim(record);
        tablesWritten(putRecord(domain, record && `${JSON.stringify(record, null, 2)}\n`, RECORD_MODE));
      },
      async () => {
        const hashes = hashBefore === null ? new Map() : new Map([[account.user, hashBefore]]);
        tablesWritten(putRecord(domain, before, RECORD_MODE, hashes));
      },
      mail,
    );
  }

  const maildirStep = (account: Account) =>
    ctx.step('Maildir', async () => ctx.accountDirectory(account, ['Maildir'], MAILDIR_MODE));

  const local = (account: Account) => account.mailserver === 'local';
  /**
   * The account's addon and parked domains: each a mail domain of its own when mail is local, but
   * one whose mail the DNS sends to another server (Domain.mail).
   */
  const mailSites = (account: Account, objects: AccountObjects | undefined) =>
    local(account)
      ? sitesOf(account, objects).flatMap((s) =>
          (s.kind === 'addon' || s.kind === 'parked') && s.mailHere ? [{ ...s, kind: s.kind }] : [],
        )
      : [];
  /** Writes the record of every mail domain of the account (the main one first). */
  const update = (name: string, account: Account, objects?: AccountObjects) =>
    local(account)
      ? [
          recordStep(name, account, () => recordOf(account, undefined, objects)),
          ...mailSites(account, objects).map((s) =>
            recordStep(
              s.named(name),
              account,
              () => recordOf(account, { domain: s.site.domain, kind: s.kind }, objects),
              s.site.domain,
            ),
          ),
        ]
      : [];
  /** The directory of each of the account's mailboxes (what is there already is kept). */
  const mailboxDirectories = (account: Account, objects?: AccountObjects) =>
    local(account) ? (objects?.mailboxes ?? []).map((m) => mailboxes.directoryStep(account, m.email)) : [];
  /** Removes the record of every mail domain of the account (the main one last). */
  const removeAll = (name: string, account: Account, objects?: AccountObjects) =>
    local(account)
      ? [
          ...mailSites(account, objects).map((s) =>
            recordStep(s.named(name), account, () => null, s.site.domain),
          ),
          recordStep(name, account, () => null),
        ]
      : [];

  return {
    name: 'mail',
    services: [mail],

    async prepare() {
      // Dovecot reads the logins through its SQLite driver (Debian's dovecot-sqlite): without it,
      // Berth does not start, and nothing is changed.
      if (ctx.live && !existsSync(ctx.path(DOVECOT_SQLITE)))
        throw new Error(
          `the mail component needs Dovecot's SQLite driver (${DOVECOT_SQLITE}: dovecot-sqlite)`,
        );
      makePrivateDirectory(ctx.path(linux.mailDir));
      tablesWritten(writeTables());
      if (!ctx.live) return;
      milters ??= await startMilters(ctx, { text }, database);
      served ??= await serveTables(ctx, lookup);
      const certificate = tls ? tls.hostCertificateFile : '/etc/ssl/certs/ssl-cert-snakeoil.pem';
      writeFileAtomic(
        ctx.path(dovecotQueryFile),
        dovecotQueries(dovecotDatabasePath(ctx)),
        0o640,
        systemGroupId(ctx.root, 'dovecot'),
      );
      const dovecotConf = ctx.path('/etc/dovecot/dovecot.conf');
      const was = readIfExists(dovecotConf);
      const now = render('mail/dovecot.conf', {
        address: linux.mailAddress,
        imap_port: String(linux.imapPort),
        host_name: config.hostName,
        certificate,
        queries: dovecotQueryFile,
      });
      writeFileAtomic(dovecotConf, now, 0o644);
      // A Dovecot already running with another configuration (an older Berth's, whose logins were
      // passwd-files) takes this one; one not running reads it when it starts.
      if (was !== now) await runner.run(['/usr/bin/doveadm', 'reload']).catch(() => {});
      for (const old of ['logins', 'users']) removeFile(ctx.path(join(linux.dovecotMapDir, old)));
      writeFileAtomic(
        ctx.path('/etc/opendkim.conf'),
        render('mail/opendkim.conf', {
          socket: join(linux.postfixQueueDir, DKIM_SOCKET),
          keys: join(linux.opendkimMapDir, 'keys'),
          signing: join(linux.opendkimMapDir, 'signing'),
        }),
        0o644,
      );
      await configurePostfix(ctx, certificate);
    },

    postfixTableWritten() {
      tablesWritten(new Set(['postfix']));
    },

    async reloadSettings() {
      // Every process Postfix started before now ends once idle: one that read settings of an older
      // Berth, or that remembers a lookup failed while Berth was down (smtpd keeps an address it
      // could not resolve so until it ends).
      tablesWritten(new Set(['postfix']));
      await mail.reload();
    },

    async serveMilter(name, policy, lists) {
      await milters?.serve(name, policy, lists);
    },

    async listQueue() {
      await milters?.listQueue();
    },

    async close() {
      const running = [milters, served];
      milters = null;
      served = null;
      // The milters and the tables first: they ask the database.
      await Promise.all(running.map((each) => each?.close()));
      database.close();
    },

    create: (account, _origin, objects) =>
      local(account)
        ? [
            maildirStep(account),
            ...mailboxDirectories(account, objects),
            ...update('mail domain', account, objects),
          ]
        : [],
    remove: (account, objects) => removeAll('mail domain', account, objects),
    suspend: (account, objects) => update('mail logins', account, objects),
    unsuspend: (account, objects) => update('mail logins', account, objects),
    // The user component has set the new hash by now; the logins table takes it. Every record of
    // the account is rewritten from the store's view (its quota, its suspension) on these changes.
    changePassword: (account) => update('mail password', account),
    changeLimits: (before, after) =>
      before.limits.mailquota === after.limits.mailquota ? [] : update('mailbox quota', after),
    changeObjects(account, before, after) {
      const now = new Set(mailSites(account, after).map((s) => s.site.domain));
      const was = new Set(mailSites(account, before).map((s) => s.site.domain));
      const had = new Set(before.mailboxes.map((m) => m.email));
      // The records of the domains kept whose mailboxes or forwarders changed.
      const changed = local(account)
        ? [
            ...(mailChanged(account.domain, before, after)
              ? [recordStep('mailboxes', account, () => recordOf(account, undefined, after))]
              : []),
            ...mailSites(account, after)
              .filter((s) => was.has(s.site.domain) && mailChanged(s.site.domain, before, after))
              .map((s) =>
                recordStep(
                  s.named('mailboxes'),
                  account,
                  () => recordOf(account, { domain: s.site.domain, kind: s.kind }, after),
                  s.site.domain,
                ),
              ),
          ]
        : [];
      return [
        ...mailboxDirectories(account, {
          ...after,
          mailboxes: after.mailboxes.filter((m) => !had.has(m.email)),
        }),
        ...changed,
        ...mailSites(account, before)
          .filter((s) => !now.has(s.site.domain))
          .map((s) => recordStep(s.named('mail domain'), account, () => null, s.site.domain)),
        ...mailSites(account, after)
          .filter((s) => !was.has(s.site.domain))
          .map((s) =>
            recordStep(
              s.named('mail domain'),
              account,
              () => recordOf(account, { domain: s.site.domain, kind: s.kind }, after),
              s.site.domain,
            ),
          ),
      ];
    },
    // Last, once nothing serves them: the mail of the mailboxes that went.
    async forgetObjects(account, before, after) {
      for (const email of removedMailboxes(before, after)) await mailboxes.removeDirectory(account, email);
    },

    async reconcile(account, objects) {
      if (!local(account)) return;
      await maildirStep(account).run();
      // A link the account planted in a mailbox's way leaves that mailbox without its directory
      // (doctor says so); the rest is still repaired.
      for (const step of mailboxDirectories(account, objects))
        await step.run().catch((error: unknown) => {
          if (!(error instanceof StepRefused)) throw error;
        });
      for (const step of update('mail domain', account, objects)) await step.run();
    },
    async purge(account) {
      await recordStep('mail domain', account, () => null).run();
    },
    async purgeDomain(domain) {
      const file = recordFile(domain);
      if (!existsSync(file)) return;
      tablesWritten(putRecord(domain, null, RECORD_MODE));
    },

    inspect(accounts, sites, objects = new Map()) {
      const differences: string[] = mailboxes.inspect(
        accounts,
        objects,
        records(),
        text('aliases'),
        database,
      );
      const listed = text('domains');
      const mailDomains = sites.filter((s) => local(s.site) && s.kind !== 'subdomain' && s.mailHere);
      for (const { site, kind } of mailDomains) {
        const whose = kind === 'main' ? site.user : `${site.user} (${site.domain})`;
        if (!existsSync(recordFile(site.domain))) differences.push(`${whose}: no mail domain`);
        else if (!listed.split('\n').includes(`${site.domain} OK`))
          differences.push(`${whose}: mail domain not in Postfix's domains table`);
      }
      // What lists the tenants is no account's to read (a table written by an older Berth was).
      const recordFiles = existsSync(ctx.path(linux.mailDir))
        ? readdirSync(ctx.path(linux.mailDir)).map((name) => join(linux.mailDir, name))
        : [];
      const rows = dovecotDatabasePath(ctx);
      const tableFiles = [
        ...Object.values(tableNames),
        ...[rows, `${rows}-wal`, `${rows}-shm`, dovecotQueryFile].filter((path) =>
          existsSync(ctx.path(path)),
        ),
      ];
      for (const path of [linux.mailDir, ...recordFiles, ...tableFiles]) {
        const real = ctx.path(path);
        const mode = lstatSync(real, { throwIfNoEntry: false })?.mode ?? 0;
        if ((mode & 0o007) !== 0)
          differences.push(`${path}: readable by every user (mode 0${(mode & 0o777).toString(8)})`);
      }
      const expected = new Set(mailDomains.map((s) => domainFile(s.site.domain, '.json')));
      return [...differences, ...strayFiles(ctx, linux.mailDir, expected, '.json', 'mail domain')];
    },
  };
}
