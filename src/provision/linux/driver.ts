// The `linux` driver: real hosting accounts on this server, made of the components of CONTRACT §10
// (user, php, tls, web, dns, mail, shell, cron, lists, database, ftp, webmail), each in its own
// folder with its templates, steps, undo and doctor checks. A call's steps are every enabled
// component's, in that order; the services those steps changed are reloaded once, at the end, and
// again on undo; createacct then waits for what its steps left running (a PHP-FPM master
// starting). Below a system root other than `/` (the tests), no service is reloaded.
import type { Config } from '../../config/index.ts';
import { domainError } from '../../core/values.ts';
import type { Account } from '../../store/accounts.ts';
import { mainObjects } from '../../store/objects.ts';
import { type CertificateRow, type Driver, type Step, StepFailed } from '../driver.ts';
import { backupComponent } from './backup/component.ts';
import {
  type Component,
  coalesceReloads,
  type LinuxStep,
  linuxContext,
  type Service,
  sitesOf,
} from './context.ts';
import { cronComponent } from './cron/component.ts';
import { databaseBackupPart } from './database/backup.ts';
import { databaseComponent } from './database/component.ts';
import { dnsComponent } from './dns/component.ts';
import { dkimKeyFile } from './dns/dkim.ts';
import { makeUnlistedDirectory, readIfExists } from './files.ts';
import { ftpComponent } from './ftp/component.ts';
import { listsComponent } from './lists/component.ts';
import { mailComponent } from './mail/component.ts';
import { packFiles, unpackFiles } from './move.ts';
import { shadowPassword, systemIds, systemNameTaken } from './passwd.ts';
import { phpComponent } from './php/component.ts';
import type { CommandRunner } from './run.ts';
import { shellComponent } from './shell/component.ts';
import { tlsComponent } from './tls/component.ts';
import { type CertificateKeeper, certificateKeeper } from './tls/keeper.ts';
import { measureUsage } from './usage.ts';
import { userComponent } from './user/component.ts';
import { webComponent } from './web/component.ts';
import { webmailComponent } from './webmail/component.ts';

/**
 * How often, while serving, what escaped an account's quota is brought under it (two commands),
 * what each account has waiting in Postfix's queue is counted (a listing of the whole queue), the
 * /etc of each account's PHP is brought up to date (php/etc-view.ts: a listing of /etc),
 * and FTP accounts' sessions are moved into their accounts' control groups (ftp/sessions.ts).
 */
const [QUOTA_SWEEP_MS, QUEUE_SWEEP_MS, ETC_SWEEP_MS, FTP_SWEEP_MS, PHP_SWEEP_MS] = [
  1_000, 5_000, 2_000, 1_000, 10_000,
];

export { gecosOf } from './user/component.ts';

const USER = /^[a-z][a-z0-9]{0,15}$/;
const PATH = /^\/[A-Za-z0-9._/-]+$/;

/**
 * Identifiers are checked where they are used, whatever checked them before, by the same domain
 * rules the API validates with: whatever the API accepts, the driver can do.
 */
function checkIdentifiers(account: { user: string; domain: string; homedir: string }): void {
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

export interface LinuxDriverOptions {
  config: Config;
  runner: CommandRunner;
  hashPassword(password: string): Promise<string>;
  /** Tests name a step here to make it fail, proving that the earlier ones are undone. */
  failAt?: () => string | null;
}

export function linuxDriver(options: LinuxDriverOptions): Driver {
  const { config } = options;
  const ctx = linuxContext(config, options.runner, options.hashPassword, options.failAt);
  const enabled = new Set(config.linux.components);
  const shell = enabled.has('shell') ? shellComponent(ctx) : null;
  const user = userComponent(ctx, shell?.groupsOf);
  const php = enabled.has('php') ? phpComponent(ctx) : null;
  const tls = enabled.has('tls') ? tlsComponent(ctx) : null;
  const web = enabled.has('web') ? webComponent(ctx, tls, php !== null) : null;
  const dns = enabled.has('dns') ? dnsComponent(ctx) : null;
  const mail = enabled.has('mail') ? mailComponent(ctx, tls) : null;
  const cron = enabled.has('cron') ? cronComponent(ctx) : null;
  // The mailing lists are the mail component's Postfix's: none without it.
  const lists = enabled.has('lists') && mail ? listsComponent(ctx, mail) : null;
  const database = enabled.has('database') ? databaseComponent(ctx) : null;
  const ftp = enabled.has('ftp')
    ? ftpComponent(ctx, tls ? tls.hostCertificateFile : '/etc/ssl/certs/ssl-cert-snakeoil.pem')
    : null;
  const webmail = enabled.has('webmail') ? webmailComponent(ctx, web) : null;
  const all = [user, php, tls, web, dns, mail, shell, cron, lists, database, ftp, webmail];
  const components: Component[] = all.filter((c): c is NonNullable<typeof c> => c !== null);
  const others = components.filter((c) => c !== user);
  const reloadCounts = new Map<string, number>();
  for (const service of new Set(components.flatMap((c) => c.services ?? [])))
    coalesceReloads(service, () => reloadCounts.set(service.name, (reloadCounts.get(service.name) ?? 0) + 1));
  let keeper: CertificateKeeper | null = null;
  // Identifiers are checked where they are used, a restore asked by another server's call too.
  const backupsHere = backupComponent(ctx, database ? [databaseBackupPart(ctx)] : []);
  const backups: typeof backupsHere = {
    ...backupsHere,
    backup: (account, objects, record) => {
      checkIdentifiers(account);
      return backupsHere.backup(account, objects, record);
    },
    restore: async (account, objects, snapshot, request, held) => {
      checkIdentifiers(account);
      await backupsHere.restore(account, objects, snapshot, request, held);
      // A directory put back is another: FTP pins follow it (one now a link stays empty: doctor).
      await ftp?.resume?.(account, objects).catch(() => {});
    },
  };
  const sweepTimers: NodeJS.Timeout[] = [];

  /**
   * Reloads each service the steps changed, once, after them; and again if they are undone. A
   * step that changes a service's files waits while the service reads them, and learns which
   * reload reads its change: the call waits for that one. The services reload at the same time,
   * each in a step of its own (a failure names its service): the first of those steps starts them.
   */
  function plan(planned: LinuxStep[], irreversible: Step[] = []): Step[] {
    const carriedBy = new Map<Service, number>();
    const steps = planned.map((step): LinuxStep => {
      const service = step.reloads;
      if (!service?.writing) return step;
      return {
        ...step,
        run: async () => {
          const { carriedBy: reload } = await service.writing!(() => step.run());
          carriedBy.set(service, Math.max(reload, carriedBy.get(service) ?? 0));
        },
        undo: async () => {
          await service.writing!(() => step.undo());
        },
      };
    });
    const services = ctx.live ? [...new Set(steps.flatMap((s) => (s.reloads ? [s.reloads] : [])))] : [];
    if (services.length === 0) return [...steps, ...irreversible];
    let reloading: Map<Service, Promise<void>> | null = null;
    const reloadAll = () => {
      reloading ??= new Map(
        services.map((service) => {
          const number = carriedBy.get(service);
          const reload =
            number !== undefined && service.reloadCarrying
              ? service.reloadCarrying(number)
              : service.reload();
          // Each is awaited by its own step; one that fails first must not leave the rest unheard.
          reload.catch(() => {});
          return [service, reload];
        }),
      );
      return reloading;
    };
    return [
      // Undone last of all: once every file is back as it was, the services read them again.
      ctx.step(
        'reload services on undo',
        async () => {},
        async () => {
          await Promise.allSettled(services.map((service) => service.reload()));
        },
      ),
      ...steps,
      ...services.map((service) => ctx.step(`reload ${service.name}`, () => reloadAll().get(service)!)),
      ...irreversible,
    ];
  }
  const each = (call: (component: Component) => LinuxStep[] | undefined, list = components) =>
    list.flatMap((component) => call(component) ?? []);
  /** Removes every trace of a domain beside an account's main one that no account has now. */
  const purgeDomain = async (domain: string) => {
    if (domainError(domain) !== null) throw new Error(`refusing an unsafe domain ${JSON.stringify(domain)}`);
    for (const component of components) await component.purgeDomain?.(domain);
  };
  const reloadEverything = async () => {
    if (!ctx.live) return;
    for (const service of components.flatMap((c) => c.services ?? [])) await service.reload();
  };

  return {
    name: 'linux',

    backups,

    systemPasswordHash(user) {
      // A suspended account's hash waits behind `!`; suspension is refused apart.
      const field = shadowPassword(ctx.root, user)?.replace(/^!/, '');
      return field?.startsWith('$') ? field : undefined;
    },

    // Only a server writes server-wide files: doctor, certs and usage look without writing.
    async prepare() {
      // The directories whose entries name the tenants: others pass through, never list them.
      const { zoneDir, logDir, certDir, dkimDir, phpSocketDir } = config.linux;
      const unlisted = [
        [web, logDir],
        [dns, zoneDir],
        [dns, dkimDir],
        [tls, certDir],
        [php, phpSocketDir],
      ] as const;
      for (const [component, dir] of unlisted) if (component) makeUnlistedDirectory(ctx.path(dir));
      for (const component of components) await component.prepare?.();
      if (ctx.live) await mail?.reloadSettings();
    },

    systemIds: () => systemIds(ctx.root),

    async nameTaken(name) {
      // useradd -U makes a group of the same name: a name the group database has is taken too.
      return systemNameTaken(ctx.root, name);
    },

    createAccount(account, password, objects = mainObjects(account), passwordHash) {
      checkIdentifiers(account);
      const [create, settle] = [
        each((c) => c.create?.(account, { password, passwordHash }, objects)),
        each((c) => c.settle?.(account)),
      ];
      return plan(create, settle);
    },

    async exportAccount(account) {
      checkIdentifiers(account);
      const passwordHash = shadowPassword(ctx.root, account.user);
      if (passwordHash === undefined) throw new Error(`${account.user} has no system user here`);
      const pem = tls ? readIfExists(ctx.path(tls.certificateFile(account.domain))) : null;
      const state = tls?.readState(account.domain) ?? null;
      return {
        passwordHash,
        certificate: pem && state ? { pem, state } : null,
        dkimKey: readIfExists(ctx.path(dkimKeyFile(config.linux.dkimDir, account.domain))),
        ...(database && { databases: await database.dumps(account.user) }),
      };
    },

    accountFiles(account) {
      checkIdentifiers(account);
      return packFiles(ctx, account);
    },

    receiveAccount(account, moved, objects = mainObjects(account)) {
      checkIdentifiers(account);
      // Made as a new account is, from what the old server had; then its files; then, if it was
      // suspended there, suspended here the way suspendacct does it.
      const files = ctx.step('account files', async () => unpackFiles(ctx, account, await moved.files()));
      return plan([
        ...each((c) => c.create?.(account, { moved }, objects)),
        files,
        ...(account.suspension ? each((c) => c.suspend?.(account, objects)) : []),
      ]);
    },

    removeAccount(account, objects = mainObjects(account)) {
      checkIdentifiers(account);
      // Last, because it cannot be undone: the user, its home, and what goes with it (logs).
      const last: Step = {
        ...ctx.step('system user', async () => {
          await user.removeUser(account).run();
          for (const component of others) await component.forget?.(account, objects);
        }),
        leaves:
          "the account's processes may be ended, its logins locked and part of its home removed; removeacct made again finishes the removal",
      };
      return plan(
        each((c) => c.remove?.(account, objects), [...others].reverse()),
        [last],
      );
    },

    suspendAccount(account, objects = mainObjects(account)) {
      checkIdentifiers(account);
      // Last, once no login can start again: every process of the account ends, sessions too.
      return plan([...each((c) => c.suspend?.(account, objects)), user.endProcesses(account)]);
    },

    unsuspendAccount(account, objects = mainObjects(account)) {
      checkIdentifiers(account);
      return plan(each((c) => c.unsuspend?.(account, objects)));
    },

    changePassword(account, password, _objects, passwordHash) {
      checkIdentifiers(account);
      return plan(each((c) => c.changePassword?.(account, password, passwordHash)));
    },

    changeLimits(before, after) {
      checkIdentifiers(after);
      // A shell taken away ends the sessions that had it, and whatever they left running: every
      // process of the account ends, then its PHP starts again.
      const shellTaken = before.shellEnabled && !after.shellEnabled && !after.suspension;
      return plan([
        ...each((c) => c.changeLimits?.(before, after)),
        ...(shellTaken
          ? [...(php?.suspend?.(after) ?? []), user.endProcesses(after), ...(php?.unsuspend?.(after) ?? [])]
          : []),
      ]);
    },

    changeObjects(account, before, after) {
      checkIdentifiers(account);
      const now = new Set(after.domains.map((d) => d.domain));
      // Last, once the services no longer write for them: what goes with the domains that went.
      const last: Step = {
        ...ctx.step('what went with removed domains, mailboxes, lists and databases', async () => {
          for (const component of components) await component.forgetObjects?.(account, before, after);
        }),
        leaves:
          "part of what went with them may be removed (a mailbox's mail, a list's directory, a database's data, a site's logs); the call made again finishes it",
      };
      const mailboxes = new Set(after.mailboxes.map((m) => m.email));
      const lists = new Set(after.mailing_lists.map((l) => l.email));
      const databases = new Set(after.databases.map((d) => d.name));
      const gone =
        before.domains.some((d) => !now.has(d.domain)) ||
        before.mailboxes.some((m) => !mailboxes.has(m.email)) ||
        before.mailing_lists.some((l) => !lists.has(l.email)) ||
        before.databases.some((d) => !databases.has(d.name));
      return plan(
        each((c) => c.changeObjects?.(account, before, after)),
        gone ? [last] : [],
      );
    },

    async resume(accounts, objectsOf) {
      const failures: string[] = [];
      for (const account of accounts) {
        const objects = (await objectsOf?.(account.user)) ?? mainObjects(account);
        for (const component of components)
          await component.resume?.(account, objects).catch((error: unknown) => {
            failures.push(`${account.user}: ${component.name}: ${(error as Error).message}`);
          });
      }
      return failures;
    },

    async reconcile(account, objects = mainObjects(account), strays = []) {
      checkIdentifiers(account);
      for (const domain of strays) await purgeDomain(domain);
      for (const component of components) await component.reconcile?.(account, objects);
      await reloadEverything();
    },

    async purge(account, domains = []) {
      const identified = account as Account;
      checkIdentifiers(identified);
      for (const domain of domains) if (domain !== account.domain) await purgeDomain(domain);
      for (const component of [...others].reverse()) {
        await component.purge?.(identified);
        await component.forget?.(identified);
      }
      // The services let go of the account (PHP-FPM's pool ends) before its user goes.
      await reloadEverything();
      await user.purge?.(identified);
    },

    reloadCounts: () => reloadCounts,

    inspect: async (loadAccounts, loadObjects) => {
      const accounts = await loadAccounts();
      const objects = (await loadObjects?.()) ?? new Map();
      const sites = accounts.flatMap((account) => sitesOf(account, objects.get(account.user)));
      const found = await Promise.all(
        components.map(async (component) => component.inspect?.(accounts, sites, objects) ?? []),
      );
      return found.flat().sort();
    },

    measureUsage: async (accounts, domains) =>
      measureUsage(config, accounts, await user.diskUsage(accounts), { domains }),

    startBackgroundWork(store, log) {
      // Whatever an account made since that its quota does not count yet (a btrfs subvolume of its
      // own inside its home) is brought under it, and what each account has waiting in Postfix's
      // queue is counted. Each sweep starts again only once it has ended. DKIM keys are made ahead.
      if (ctx.live && sweepTimers.length === 0) {
        dns?.keyPool.start();
        const sweeps: [string, number, () => Promise<void>][] = [
          ['quota enforcement', QUOTA_SWEEP_MS, () => user.sweepQuotas(() => store.accounts())],
        ];
        if (mail) sweeps.push(['counting the mail queue', QUEUE_SWEEP_MS, () => mail.listQueue()]);
        if (php) {
          sweeps.push(["PHP's /etc", ETC_SWEEP_MS, () => php.refreshEtc()]);
          // Masters start at a request on the account's socket (the sweep asks again until the
          // activator is reached), and end when idle.
          void php
            .serve((user) => store.account(user), log)
            .catch((error: unknown) => log.warn({ err: error }, 'PHP masters cannot be started on demand'));
          sweeps.push(['starting and ending PHP masters', PHP_SWEEP_MS, () => php.sweep()]);
        }
        if (ftp)
          sweeps.push([
            "moving FTP sessions into their accounts' groups",
            FTP_SWEEP_MS,
            () => ftp.placeSessions(() => store.accounts()),
          ]);
        for (const [what, every, run] of sweeps) {
          let running = false;
          const timer = setInterval(() => {
            if (running) return;
            running = true;
            void run()
              .catch((error: unknown) => log.warn({ err: error }, `${what} failed`))
              .finally(() => {
                running = false;
              });
          }, every);
          timer.unref();
          sweepTimers.push(timer);
        }
      }
      // Certificates are obtained only on a live system: below a test root there is no nginx.
      if (!tls || !web || !ctx.live || keeper) return;
      keeper = certificateKeeper(ctx, tls, store, log);
      tls.onCertificate = (account) => keeper?.watch(account);
    },

    certificates(accounts, objects): CertificateRow[] {
      if (!tls) return [];
      // Every domain of each account when its objects are given; its main domain alone otherwise.
      return accounts.flatMap((account) =>
        sitesOf(account, objects?.get(account.user)).map(({ site }) => ({
          user: account.user,
          domain: site.domain,
          ...tls.readState(site.domain),
        })),
      );
    },

    enforceQuotas: (accounts) => user.enforce(accounts),

    close: async () => {
      for (const timer of sweepTimers.splice(0)) clearInterval(timer);
      await mail?.close();
      await Promise.all([keeper?.close(), dns?.keyPool.close()]);
      keeper = null;
    },
  };
}
