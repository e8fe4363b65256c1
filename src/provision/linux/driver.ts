// The `linux` driver: real hosting accounts on this server. A system user with its password, home
// and quota; an nginx server block; a BIND zone with SPF and DKIM. Every step has its undo. With a
// system root other than `/` (the tests), everything happens below it and no service is reloaded.
import { createPublicKey } from 'node:crypto';
import { join } from 'node:path';
import type { Config } from '../../config.ts';
import { NOLOGIN } from '../../operations/record.ts';
import type { Account } from '../../store/accounts.ts';
import { domainError } from '../../values.ts';
import { type Driver, type Step, StepFailed } from '../driver.ts';
import { dkimTxtStrings, generateDkimKey, nameFits, signsMail } from './dkim.ts';
import { inspectSystem } from './doctor.ts';
import { domainFile, readIfExists, removeFile, restoreFile, under, writeFileAtomic } from './files.ts';
import { createHome, ensureDirectory, kindOf, removeHome, settleDirectory } from './home.ts';
import { findSystemUser, shadowPassword, systemNameTaken } from './passwd.ts';
import type { CommandRunner } from './run.ts';
import { render } from './templates.ts';
import { measureUsage } from './usage.ts';

const USER = /^[a-z][a-z0-9]{0,15}$/;
const PATH = /^\/[A-Za-z0-9._/-]+$/;

/** The GECOS field names the domain, and marks the user as one Berth made (for `berth doctor`). */
export function gecosOf(account: Account): string {
  return `Berth ${account.domain}`;
}

/**
 * Identifiers are checked where they are used, whatever checked them before, by the same domain
 * rules the API validates with: whatever the API accepts, the driver can do.
 */
function checkIdentifiers(account: Account): void {
  const ok =
    USER.test(account.user) &&
    domainError(account.domain) === null &&
    PATH.test(account.homedir) &&
    !account.homedir.includes('..');
  if (!ok)
    throw new StepFailed(
      'check identifiers',
      new Error(`refusing unsafe identifiers for ${JSON.stringify(account.user)}`),
    );
}

const HOME_MODE = 0o711;
const PUBLIC_HTML_MODE = 0o755;

export interface LinuxDriverOptions {
  config: Config;
  runner: CommandRunner;
  hashPassword(password: string): Promise<string>;
  /** Tests name a step here to make it fail, proving that the earlier ones are undone. */
  failAt?: () => string | null;
}

export function linuxDriver(options: LinuxDriverOptions): Driver {
  const { config, runner } = options;
  const { linux } = config;
  const root = linux.systemRoot;
  const live = root === '/';
  const prefix = live ? [] : ['--prefix', root];
  const path = (p: string) => under(root, p);
  // nginx's default server-name hash holds names of some 45 characters: one longer domain beside
  // another would fail nginx -t for every site. Sized here for 253-character names.
  if (linux.nginxHttpSettings !== '') {
    const settings = render('http.conf', {}, {});
    const file = path(linux.nginxHttpSettings);
    if (readIfExists(file) !== settings) writeFileAtomic(file, settings, 0o644);
  }

  const step = (
    name: string,
    run: () => Promise<void>,
    undo: () => Promise<void> = async () => {},
  ): Step => ({
    name,
    run: async () => {
      if (options.failAt?.() === name) throw new Error(`failure injected at ${name}`);
      await run();
    },
    undo,
  });

  const useraddArgs = (account: Account) => [
    '/usr/sbin/useradd',
    ...prefix,
    '-M',
    '-U',
    '-d',
    account.homedir,
    '-s',
    shellOf(account),
    '-c',
    gecosOf(account),
    '--',
    account.user,
  ];
  const usermod = (user: string, args: string[]) =>
    runner.run(['/usr/sbin/usermod', ...prefix, ...args, '--', user]);
  const shellOf = (account: Account) =>
    account.suspension || !account.shellEnabled ? NOLOGIN : config.shell;
  const serverBlockPath = (account: Account) =>
    path(join(linux.nginxDir, domainFile(account.domain, '.conf')));
  const zonePath = (account: Account) => path(join(linux.zoneDir, domainFile(account.domain, '.db')));
  const dkimPaths = (account: Account) => ({
    key: path(join(linux.dkimDir, domainFile(account.domain, '.private'))),
    txt: path(join(linux.dkimDir, domainFile(account.domain, '.txt'))),
  });
  const accessLog = (account: Account) => path(join(linux.logDir, domainFile(account.domain, '.access.log')));

  function serverBlock(account: Account): string {
    const ipv4 = account.dedicatedIpv4 ?? config.sharedIpv4;
    const ipv6 = account.dedicatedIpv6 ?? config.sharedIpv6;
    const listen = [`    listen ${ipv4}:${linux.httpPort};`];
    if (ipv6) listen.push(`    listen [${ipv6}]:${linux.httpPort};`);
    const values = {
      user: account.user,
      domain: account.domain,
      public_html: path(join(account.homedir, 'public_html')),
      access_log: accessLog(account),
    };
    return render(account.suspension ? 'suspended.conf' : 'server.conf', values, {
      listen: listen.join('\n'),
    });
  }

  function zone(account: Account, dkimPublic: string | null, now: Date): string {
    const ipv4 = account.dedicatedIpv4 ?? config.sharedIpv4;
    const ipv6 = account.dedicatedIpv6 ?? config.sharedIpv6;
    const serial = `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}${String(now.getUTCDate()).padStart(2, '0')}01`;
    const spf = ['v=spf1', 'a', ...(account.mailserver === 'local' ? ['mx'] : []), `ip4:${ipv4}`];
    if (ipv6) spf.push(`ip6:${ipv6}`);
    spf.push('~all');
    // A name longer than DNS allows (a long domain's `www` or `mail`) cannot exist: its record is
    // left out, and mail goes to the domain's own address instead of mail.<domain>.
    const fits = (label: string) => nameFits(label, account.domain);
    const mailHost = fits('mail') ? `mail.${account.domain}.` : `${account.domain}.`;
    const blocks = {
      ns_records: account.nameservers.map((ns) => `@       IN NS   ${ns}.`).join('\n'),
      aaaa_records: ipv6 ? `@       IN AAAA ${ipv6}` : '',
      www_record: fits('www') ? 'www     IN CNAME @' : '',
      mail_records:
        account.mailserver === 'local'
          ? `@       IN MX 10 ${mailHost}${fits('mail') ? `\nmail    IN A    ${ipv4}` : ''}`
          : '',
      spf_record: account.spf ? `@       IN TXT  "${spf.join(' ')}"` : '',
      dkim_record: dkimPublic
        ? `default._domainkey IN TXT ( ${dkimTxtStrings(dkimPublic)
            .map((s) => `"${s}"`)
            .join(' ')} )`
        : '',
    };
    const hostmaster = fits('hostmaster') ? `hostmaster.${account.domain}` : `hostmaster.${config.hostName}`;
    return render(
      'zone.db',
      {
        user: account.user,
        domain: account.domain,
        primary_ns: account.nameservers[0]!,
        hostmaster,
        serial,
        ipv4,
      },
      blocks,
    );
  }

  /** Writes a file as a step whose undo puts back what was there before. */
  function fileStep(name: string, file: string, mode: number, content: () => string | null): Step {
    let before: string | null = null;
    return step(
      name,
      async () => {
        before = readIfExists(file);
        const next = content();
        restoreFile(file, next, mode);
      },
      async () => restoreFile(file, before, mode),
    );
  }

  async function checkZone(account: Account): Promise<void> {
    if (linux.checkZone.length > 0)
      await runner.run([...linux.checkZone, '--', account.domain, zonePath(account)]);
  }

  // Undone last of all: once every file is back as it was, the services read them again.
  const reloadOnUndo = (): Step[] =>
    live
      ? [
          step(
            'reload services on undo',
            async () => {},
            async () => void (await reloadAll().catch(() => {})),
          ),
        ]
      : [];
  async function reloadAll(): Promise<void> {
    if (linux.testWeb.length > 0) await runner.run(linux.testWeb);
    if (linux.reloadWeb.length > 0) await runner.run(linux.reloadWeb);
    if (linux.reloadDns.length > 0) await runner.run(linux.reloadDns);
  }
  const reload = (): Step[] => (live ? [step('reload web and DNS servers', reloadAll)] : []);

  function quotaStep(account: Account, before: Account | null): Step[] {
    const fs = linux.quotaFilesystem;
    // setquota has no --prefix: below another system root it would change this machine's quotas.
    if (!fs || !live) return [];
    const set = (a: Account | null) => {
      const kb = a?.limits.quota === null || a === null ? 0 : a.limits.quota * 1024;
      return runner.run([
        '/usr/sbin/setquota',
        '-u',
        '--',
        account.user,
        String(kb),
        String(kb),
        '0',
        '0',
        fs,
      ]);
    };
    return [
      step(
        'disk quota',
        () => set(account).then(() => {}),
        () => set(before).then(() => {}),
      ),
    ];
  }

  return {
    name: 'linux',

    async nameTaken(user) {
      // useradd -U makes a group of the same name: a name the group database has is taken too.
      return systemNameTaken(root, user);
    },

    async reconcile(account) {
      checkIdentifiers(account);
      if (!findSystemUser(root, account.user)) await runner.run(useraddArgs(account));
      await usermod(account.user, ['-s', shellOf(account)]);
      const password = shadowPassword(root, account.user) ?? '';
      if (account.suspension && !password.startsWith('!')) await usermod(account.user, ['-L']);
      // A user whose password was never set stays locked: there is nothing to unlock to.
      if (!account.suspension && password.startsWith('!') && password.length > 1)
        await usermod(account.user, ['-U']);
      const user = findSystemUser(root, account.user)!;
      const home = path(account.homedir);
      // A removeacct cut short may have taken the home already. Inside it, anything that is not
      // what Berth made (a link where public_html was) is left alone for doctor to report.
      if (kindOf(home, []) === 'missing') createHome(home, user, HOME_MODE);
      else settleDirectory(home, [], user, HOME_MODE);
      ensureDirectory(home, ['public_html'], user, PUBLIC_HTML_MODE);
      let dkimPublic: string | null = null;
      if (signsMail(account)) {
        const keys = dkimPaths(account);
        const existing = readIfExists(keys.key);
        if (existing) {
          dkimPublic = createPublicKey(existing).export({ type: 'spki', format: 'der' }).toString('base64');
        } else {
          const key = await generateDkimKey();
          writeFileAtomic(keys.key, key.privatePem, 0o600);
          dkimPublic = key.publicBase64;
        }
        writeFileAtomic(keys.txt, `${dkimTxtStrings(dkimPublic).join('')}\n`, 0o644);
      }
      writeFileAtomic(zonePath(account), zone(account, dkimPublic, new Date()), 0o644);
      await checkZone(account);
      writeFileAtomic(serverBlockPath(account), serverBlock(account), 0o644);
      if (live) await reloadAll();
    },

    async purge(account) {
      const identified = { ...account } as Account;
      checkIdentifiers(identified);
      const keys = dkimPaths(identified);
      for (const file of [serverBlockPath(identified), zonePath(identified), keys.key, keys.txt])
        removeFile(file);
      // Only a user Berth made for this very domain is removed.
      const user = findSystemUser(root, account.user);
      if (user?.gecos === gecosOf(identified)) {
        await runner.run(['/usr/sbin/userdel', ...prefix, '--', account.user]);
        removeHome(path(account.homedir));
      }
      if (live) await reloadAll();
    },

    createAccount(account, password) {
      checkIdentifiers(account);
      let dkimPublic: string | null = null;
      const home = path(account.homedir);
      const keys = dkimPaths(account);
      return [
        ...reloadOnUndo(),
        step(
          'system user',
          async () => {
            await runner.run(useraddArgs(account));
          },
          async () => {
            await runner.run(['/usr/sbin/userdel', ...prefix, '--', account.user]);
          },
        ),
        step('password', async () => {
          await usermod(account.user, ['-p', await options.hashPassword(password)]);
        }),
        step(
          'home directory',
          async () => {
            const user = findSystemUser(root, account.user);
            if (!user) throw new Error(`${account.user} is not in ${path('/etc/passwd')}`);
            createHome(home, user, HOME_MODE);
            if (ensureDirectory(home, ['public_html'], user, PUBLIC_HTML_MODE) !== 'directory')
              throw new Error(`${join(account.homedir, 'public_html')} is not a directory`);
          },
          async () => removeHome(home),
        ),
        ...quotaStep(account, null),
        ...(signsMail(account)
          ? [
              step(
                'DKIM key',
                async () => {
                  const key = await generateDkimKey();
                  dkimPublic = key.publicBase64;
                  writeFileAtomic(keys.key, key.privatePem, 0o600);
                  writeFileAtomic(keys.txt, `${dkimTxtStrings(dkimPublic).join('')}\n`, 0o644);
                },
                async () => {
                  removeFile(keys.key);
                  removeFile(keys.txt);
                },
              ),
            ]
          : []),
        fileStep('DNS zone', zonePath(account), 0o644, () => zone(account, dkimPublic, new Date())),
        step('DNS zone check', () => checkZone(account)),
        fileStep('web server block', serverBlockPath(account), 0o644, () => serverBlock(account)),
        ...reload(),
      ];
    },

    removeAccount(account) {
      checkIdentifiers(account);
      const keys = dkimPaths(account);
      return [
        ...reloadOnUndo(),
        fileStep('web server block', serverBlockPath(account), 0o644, () => null),
        fileStep('DNS zone', zonePath(account), 0o644, () => null),
        fileStep('DKIM key', keys.key, 0o600, () => null),
        fileStep('DKIM record', keys.txt, 0o644, () => null),
        ...reload(),
        // Last, because it cannot be undone: the home directory goes with the user. Berth removes
        // the home itself (userdel -r would walk the customer's files as root).
        step('system user', async () => {
          await runner.run(['/usr/sbin/userdel', ...prefix, '--', account.user]);
          removeHome(path(account.homedir));
          removeFile(path(join('/var/mail', account.user)));
          removeFile(accessLog(account));
        }),
      ];
    },

    suspendAccount(account) {
      checkIdentifiers(account);
      return [
        ...reloadOnUndo(),
        step(
          'lock system user',
          async () => void (await usermod(account.user, ['-L', '-s', NOLOGIN])),
          async () =>
            void (await usermod(account.user, ['-U', '-s', shellOf({ ...account, suspension: null })])),
        ),
        fileStep('web server block', serverBlockPath(account), 0o644, () => serverBlock(account)),
        ...reload(),
      ];
    },

    unsuspendAccount(account) {
      checkIdentifiers(account);
      return [
        ...reloadOnUndo(),
        step(
          'unlock system user',
          async () => void (await usermod(account.user, ['-U', '-s', shellOf(account)])),
          async () => void (await usermod(account.user, ['-L', '-s', NOLOGIN])),
        ),
        fileStep('web server block', serverBlockPath(account), 0o644, () => serverBlock(account)),
        ...reload(),
      ];
    },

    changePassword(account, password) {
      checkIdentifiers(account);
      let before = '';
      return [
        step(
          'password',
          async () => {
            before = shadowPassword(root, account.user) ?? '';
            const hash = await options.hashPassword(password);
            // A suspended account stays locked: the new hash waits behind the `!`.
            await usermod(account.user, ['-p', account.suspension ? `!${hash}` : hash]);
          },
          async () => void (await usermod(account.user, ['-p', before])),
        ),
      ];
    },

    changeLimits(before, after) {
      checkIdentifiers(after);
      const steps = quotaStep(after, before);
      if (shellOf(before) !== shellOf(after)) {
        steps.push(
          step(
            'login shell',
            async () => void (await usermod(after.user, ['-s', shellOf(after)])),
            async () => void (await usermod(after.user, ['-s', shellOf(before)])),
          ),
        );
      }
      return steps;
    },

    inspect: async (loadAccounts) => inspectSystem(config, await loadAccounts()),
    measureUsage: (account) => measureUsage(config, account),
    close: async () => {},
  };
}
