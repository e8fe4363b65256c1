// The lists component (CONTRACT §14, mailing lists): the holder's lists run by Debian's mlmmj, with
// the mail component's Postfix. Mail to `<list>@<domain>` and `<list>+<anything>@<domain>` (the
// extensions mlmmj answers: +subscribe, +unsubscribe, +confsub-…, +owner, +bounces-…) is taken
// by Postfix (the `lists` regexp table serves virtual_mailbox_maps and transport_maps) and piped to
// mlmmj-receive, run as the lists user (`berth-lists`, a system user of its own: never root, never
// an account's), which keeps each list in <lists_dir>/<domain>_<local>, that user's alone (0700).
// mlmmj-send hands what the list sends to Postfix's lists smtpd on 127.0.0.1:<lists_port>, whose
// milter (policy.ts) takes mail only from the lists user's sockets and only with a list's address
// as envelope sender; that mail counts toward a queue budget of the account's lists together
// (never the account's own, whose mail a post fanned out to hosts that do not answer would
// otherwise crowd out), and is never DKIM-signed.
//
// A list's record (root's, in /etc/berth/lists) holds its account and whether it is suspended; the
// table is written whole from the records. While the account is suspended the table sends the
// list's mail to `mlmmj-held`, mlmmj's transport again but in Postfix's defer_transports: it is
// taken and waits in the queue (counted in the lists' budget; returned to its sender after
// maximal_queue_lifetime) and goes to mlmmj at Postfix's next try once unsuspended. The
// members the holder added are written into mlmmj's subscribers.d; mlmmj-sub and mlmmj-unsub keep
// those who come and go by mail there too. mlmmj-maintd runs every five minutes from cron as the
// lists user (mail refused for now sent again, confirmations that expired dropped).
import { existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { MailingList } from '../../../store/mailing-lists.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import type { Component, LinuxContext, LinuxStep } from '../context.ts';
import {
  domainFile,
  giveFile,
  makePrivateDirectory,
  makeServiceDirectory,
  readIfExists,
  restoreFile,
  writeFileAtomic,
} from '../files.ts';
import type { MailComponent } from '../mail/component.ts';
import { postfixMap } from '../mail/socketmap.ts';
import { findSystemUser, systemGroupId } from '../passwd.ts';
import {
  changeMembers,
  controlFiles,
  domainOf,
  LIST_DIR_MODE,
  type ListsUser,
  listDirName,
  localOf,
  makeListDirectory,
  membersOf,
  putBack,
  removeListDirectory,
  SAFE_ADDRESS,
  type Saved,
} from './mlmmj.ts';
import { listsPolicy } from './policy.ts';

export const LISTS_USER = 'berth-lists';
/** The lists' records: root's alone. */
export const LISTS_RECORD_DIR = '/etc/berth/lists';
/** Not named berth-<user>: those are the accounts' (cron/component.ts). */
export const LISTS_CRON = '/etc/cron.d/mlmmj-berth';
export const LISTS_SOCKET = 'berth/lists.sock';
const TEXTS = '/usr/share/mlmmj/text.skel/en';
/** The transport of a suspended account's lists: mlmmj's, but in defer_transports (mail waits). */
const HELD = 'mlmmj-held';
const RECORD_MODE = 0o600;
const TABLE_MODE = 0o640;

/** What the table says of one list. */
export interface ListRecord {
  user: string;
  email: string;
  suspended: boolean;
}

/** A name as a regexp table matches it literally (addresses are letters, digits and . _ - alone). */
const literal = (text: string) => text.replace(/[.+*?^$()[\]{}|\\/-]/g, '\\$&');

/** The `lists` table: each list's addresses (with any extension) to mlmmj, or to be held. */
export function listsTable(records: readonly ListRecord[]): string {
  return records
    .flatMap((r) => {
      const dir = listDirName(r.email);
      if (dir === null) return [];
      const target = `${r.suspended ? HELD : 'mlmmj'}:${dir}`;
      return [`/^${literal(localOf(r.email))}(\\+[^@]*)?@${literal(domainOf(r.email))}$/ ${target}\n`];
    })
    .join('');
}

export function listsComponent(ctx: LinuxContext, mail: MailComponent): Component {
  const { linux, runner } = ctx;
  const mailService = mail.services![0]!;
  const table = ctx.path(join(linux.postfixMapDir, 'lists'));
  const recordFile = (email: string) => ctx.path(join(LISTS_RECORD_DIR, domainFile(email, '.json')));
  const listDir = (email: string) => {
    const name = listDirName(email);
    if (name === null) throw new Error(`refusing an unsafe list address ${JSON.stringify(email)}`);
    return ctx.path(join(linux.listsDir, name));
  };
  const listsUser = (): ListsUser => {
    const found = findSystemUser(ctx.root, LISTS_USER);
    if (!found) throw new Error(`the lists component needs its user ${LISTS_USER} (berth serve makes it)`);
    return found;
  };
  const local = (account: Account) => account.mailserver === 'local';
  const listsOf = (account: Account, objects?: AccountObjects) =>
    local(account) ? (objects?.mailing_lists ?? []) : [];

  function records(): ListRecord[] {
    const dir = ctx.path(LISTS_RECORD_DIR);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .sort()
      .map((name) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as ListRecord);
  }

  /** Writes the table; Postfix reloads when its content changed. */
  function writeTable(): void {
    const content = listsTable(records());
    if (readIfExists(table) !== content) mail.postfixTableWritten();
    writeFileAtomic(table, content, TABLE_MODE);
    const gid = systemGroupId(ctx.root, 'postfix');
    if (gid !== undefined) giveFile(table, 0, gid);
  }

  /** Writes (or, given null, removes) a list's record and the table, as one undoable step. */
  function recordStep(name: string, email: string, next: ListRecord | null): LinuxStep {
    const file = recordFile(email);
    let before: string | null = null;
    return ctx.step(
      name,
      async () => {
        before = readIfExists(file);
        restoreFile(file, next && `${JSON.stringify(next, null, 2)}\n`, RECORD_MODE);
        writeTable();
      },
      async () => {
        restoreFile(file, before, RECORD_MODE);
        writeTable();
      },
      mailService,
    );
  }
  const record = (account: Account, list: MailingList): ListRecord => ({
    user: account.user,
    email: list.email,
    suspended: account.suspension !== null,
  });

  /** Makes the list's directory with its control files and the members the holder added. */
  function directoryStep(list: MailingList): LinuxStep {
    const dir = listDir(list.email);
    let made = false;
    let saved: Saved = new Map();
    return ctx.step(
      `mailing list ${list.email}`,
      async () => {
        if (!SAFE_ADDRESS.test(list.owner))
          throw new Error(`refusing an unsafe owner ${JSON.stringify(list.owner)}`);
        made = !existsSync(dir);
        const owner = listsUser();
        makeListDirectory(dir, controlFiles(list.email, list.owner, linux.listsPort), owner, ctx.path(TEXTS));
        saved = changeMembers(dir, list.members, [], owner);
      },
      async () => {
        if (made) removeListDirectory(dir);
        else putBack(saved, listsUser());
      },
    );
  }

  /** The members the holder added or took away since `before`. */
  function membersStep(before: MailingList, after: MailingList): LinuxStep[] {
    const add = after.members.filter((m) => !before.members.includes(m));
    const remove = before.members.filter((m) => !after.members.includes(m));
    if (add.length === 0 && remove.length === 0) return [];
    const dir = listDir(after.email);
    let saved: Saved = new Map();
    return [
      ctx.step(
        `members of ${after.email}`,
        async () => {
          saved = changeMembers(dir, add, remove, listsUser());
        },
        async () => putBack(saved, listsUser()),
      ),
    ];
  }

  const create = (account: Account, objects?: AccountObjects) =>
    listsOf(account, objects).flatMap((list) => [
      directoryStep(list),
      recordStep(`mailing list ${list.email} in Postfix`, list.email, record(account, list)),
    ]);
  const update = (name: string, account: Account, objects?: AccountObjects) =>
    listsOf(account, objects).map((list) =>
      recordStep(`${name} ${list.email}`, list.email, record(account, list)),
    );
  /** The records of the account's lists: the objects' and any the records name (made before). */
  const addressesOf = (account: Account, objects?: AccountObjects) => [
    ...new Set([
      ...(objects?.mailing_lists ?? []).map((l) => l.email),
      ...records()
        .filter((r) => r.user === account.user)
        .map((r) => r.email),
    ]),
  ];
  /** Removes lists' records and directories at once (crash recovery). */
  const purgeLists = (emails: readonly string[]) => {
    for (const email of emails) {
      restoreFile(recordFile(email), null, RECORD_MODE);
      if (listDirName(email) !== null) removeListDirectory(listDir(email));
    }
    writeTable();
  };

  return {
    name: 'lists',

    async prepare() {
      if (!findSystemUser(ctx.root, LISTS_USER))
        await runner.run([
          '/usr/sbin/useradd',
          ...ctx.prefix,
          '--system',
          '--user-group',
          '-M',
          '-d',
          linux.listsDir,
          '-s',
          '/usr/sbin/nologin',
          '-c',
          'mlmmj, mailing lists of Berth',
          '--',
          LISTS_USER,
        ]);
      const owner = listsUser();
      makeServiceDirectory(ctx.path(linux.listsDir), owner.uid, owner.gid, LIST_DIR_MODE);
      makePrivateDirectory(ctx.path(LISTS_RECORD_DIR));
      writeTable();
      writeFileAtomic(
        ctx.path(LISTS_CRON),
        [
          '# Berth: mlmmj-maintd for the mailing lists (docs/linux-driver.md, Mailing lists).',
          'SHELL=/bin/sh',
          'MAILTO=""',
          `*/5 * * * * ${LISTS_USER} /usr/bin/mlmmj-maintd -F -d ${linux.listsDir}`,
          '',
        ].join('\n'),
        0o644,
      );
      if (!ctx.live) return;
      const lists = `regexp:${join(linux.postfixMapDir, 'lists')}`;
      await runner.run([
        '/usr/sbin/postconf',
        '-e',
        `virtual_mailbox_maps=${postfixMap(linux, 'mailboxes')}, ${lists}`,
        `transport_maps=${lists}`,
        // mlmmj takes one recipient a delivery: its list directory is the next hop.
        'mlmmj_destination_recipient_limit=1',
        `${HELD}_destination_recipient_limit=1`,
        // A suspended account's lists: their mail is taken and waits in the queue.
        `defer_transports=${HELD}`,
      ]);
      const listen = `127.0.0.1:${linux.listsPort}`;
      await runner.run([
        '/usr/sbin/postconf',
        '-M',
        ...['mlmmj', HELD].map(
          (name) =>
            `${name}/unix=${name} unix - n n - - pipe flags=ORhu user=${LISTS_USER} argv=/usr/bin/mlmmj-receive -F -L ${linux.listsDir}/\${nexthop}/`,
        ),
        `${listen}/inet=${listen} inet n - y - - smtpd`,
      ]);
      await runner.run([
        '/usr/sbin/postconf',
        '-P',
        ...[
          'syslog_name=postfix/lists',
          'smtpd_sasl_auth_enable=no',
          'smtpd_tls_security_level=none',
          'mynetworks=127.0.0.0/8',
          'smtpd_client_restrictions=permit_mynetworks,reject',
          'smtpd_relay_restrictions=permit_mynetworks,reject',
          'smtpd_sender_restrictions=',
          'smtpd_discard_ehlo_keywords=silent-discard,dsn',
          `smtpd_milters=unix:${LISTS_SOCKET}`,
        ].map((option) => `${listen}/inet/${option}`),
      ]);
      await mail.serveMilter(
        LISTS_SOCKET,
        listsPolicy({
          listsUid: owner.uid,
          listsPort: linux.listsPort,
          lists: () => new Map(records().map((r) => [r.email, !r.suspended])),
        }),
        // The lists' mail is counted in a budget of the account's lists, never the account's own.
        () => records().map((r) => r.email),
      );
    },

    create: (account, _origin, objects) => create(account, objects),
    remove: (account, objects) =>
      addressesOf(account, objects).map((email) =>
        recordStep(`mailing list ${email} in Postfix`, email, null),
      ),
    // Last, once Postfix sends nothing more to them: the lists' directories, members and all.
    async forget(account, objects) {
      for (const email of addressesOf(account, objects))
        if (listDirName(email) !== null) removeListDirectory(listDir(email));
    },
    suspend: (account, objects) => update('suspend mailing list', account, objects),
    unsuspend: (account, objects) => update('unsuspend mailing list', account, objects),

    changeObjects(account, before, after) {
      const was = new Map(listsOf(account, before).map((l) => [l.email, l]));
      const now = new Set(listsOf(account, after).map((l) => l.email));
      return [
        ...listsOf(account, after).flatMap((list) => {
          const old = was.get(list.email);
          return old ? membersStep(old, list) : create(account, { ...after, mailing_lists: [list] });
        }),
        ...[...was.keys()]
          .filter((email) => !now.has(email))
          .map((email) => recordStep(`mailing list ${email} in Postfix`, email, null)),
      ];
    },
    async forgetObjects(_account, before, after) {
      const now = new Set(after.mailing_lists.map((l) => l.email));
      for (const list of before.mailing_lists)
        if (!now.has(list.email) && listDirName(list.email) !== null)
          removeListDirectory(listDir(list.email));
    },

    async reconcile(account, objects) {
      const keep = new Set(listsOf(account, objects).map((l) => l.email));
      purgeLists(addressesOf(account).filter((email) => !keep.has(email)));
      for (const step of create(account, objects)) await step.run();
    },
    async purge(account) {
      purgeLists(addressesOf(account));
    },
    async purgeDomain(domain) {
      purgeLists(
        records()
          .map((r) => r.email)
          .filter((email) => domainOf(email) === domain),
      );
    },

    inspect(accounts, _sites, objects = new Map()) {
      const differences: string[] = [];
      const user = findSystemUser(ctx.root, LISTS_USER);
      if (!user) return [`no system user ${LISTS_USER} for the mailing lists`];
      const byEmail = new Map(records().map((r) => [r.email, r]));
      const tableText = readIfExists(table) ?? '';
      const expected = new Set<string>();
      for (const account of accounts)
        for (const list of listsOf(account, objects.get(account.user))) {
          const whose = `${account.user}: mailing list ${list.email}`;
          expected.add(domainFile(list.email, '.json'));
          const found = byEmail.get(list.email);
          if (!found) differences.push(`${whose}: no record in ${LISTS_RECORD_DIR}`);
          else if (found.suspended !== (account.suspension !== null))
            differences.push(
              `${whose}: ${found.suspended ? 'suspended' : 'distributing'}, unlike its account`,
            );
          const line = listsTable([record(account, list)]);
          if (!tableText.includes(line)) differences.push(`${whose}: not as it should be in the lists table`);
          const dir = listDir(list.email);
          const stat = lstatSync(dir, { throwIfNoEntry: false });
          if (!stat?.isDirectory()) {
            differences.push(`${whose}: no directory ${join(linux.listsDir, listDirName(list.email)!)}`);
            continue;
          }
          if (stat.uid !== user.uid || (stat.mode & 0o777) !== LIST_DIR_MODE)
            differences.push(`${whose}: its directory is not ${LISTS_USER}'s alone`);
          const members = membersOf(dir);
          const missing = list.members.filter((m) => !members.has(m));
          if (missing.length > 0) differences.push(`${whose}: members ${missing.join(', ')} not subscribed`);
        }
      const top = lstatSync(ctx.path(linux.listsDir), { throwIfNoEntry: false });
      if (top && ((top.mode & 0o077) !== 0 || top.uid !== user.uid))
        differences.push(
          `${linux.listsDir}: not ${LISTS_USER}'s alone (mode 0${(top.mode & 0o777).toString(8)})`,
        );
      const strays = existsSync(ctx.path(LISTS_RECORD_DIR))
        ? readdirSync(ctx.path(LISTS_RECORD_DIR)).filter(
            (name) => name.endsWith('.json') && !name.startsWith('.') && !expected.has(name),
          )
        : [];
      for (const name of strays)
        differences.push(
          `${name.slice(0, -5)}: mailing list ${join(LISTS_RECORD_DIR, name)} with no list in the store`,
        );
      return differences;
    },
  };
}
