// The web component: nginx server blocks for each domain of the account and its www, one file per
// domain: the main domain and a subdomain serve their own docroot, an addon domain its own, a
// parked domain the main site's, all through the account's PHP pool. With the tls component, HTTP
// answers ACME challenges (from a directory Berth owns) and redirects everything else to HTTPS;
// HTTPS serves public_html with index.php first, PHP through the account's own pool (php
// component), dotfiles refused, links followed only where their owner owns the target. A suspended
// account's sites answer 503 on both (but for ACME challenges): every block looks on each request
// for the account's file in `suspended_dir`, so suspendacct and unsuspendacct make or remove one
// file and reload nothing. nginx is reloaded, never restarted, and a reload is waited for: the
// call answers once nginx's new workers serve the change, and fails when its master refuses the
// files (it says why in its error log, and serves on with what it had).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { StepRefused } from '../../driver.ts';
import {
  type Component,
  type LinuxContext,
  type Service,
  type Site,
  sitesOf,
  strayFiles,
} from '../context.ts';
import {
  appendedSince,
  domainFile,
  makeUnlistedDirectory,
  prepareSiteLogs,
  readIfExists,
  removeFile,
  removeSiteLogs,
  SITE_LOGS,
  siteLogDir,
  sizeOf,
  writeFileAtomic,
} from '../files.ts';
import { makeDirectories, removeMadeDirectories, UnsafePath } from '../home.ts';
import { phpSocket } from '../php/component.ts';
import { render } from '../templates.ts';
import type { TlsComponent } from '../tls/component.ts';
import { PUBLIC_HTML_MODE } from '../user/component.ts';
import { childrenOf, waitFor } from '../wait.ts';

/** How long a reloaded nginx may take to have new workers, at most. */
const NGINX_TAKES_MS = 120_000;
/** How long its master may rest, using no CPU and starting no workers, before the reload has failed. */
const NGINX_RESTING_MS = 3_000;

/** The CPU time a process has used (user and system, in clock ticks); -1 once it has gone. */
function cpuTime(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return -1;
  }
}

class NginxResting extends Error {
  constructor() {
    super('nginx did not take the new configuration: its master started no new workers');
  }
}

/** The first `[emerg]` line of nginx's master among lines of its error log: why it refused a configuration. */
function refusal(lines: string, master: number): string | null {
  const line = new RegExp(`\\[emerg\\] ${master}#\\d+: ([^\\n]*)`).exec(lines);
  return line ? line[1]! : null;
}

/** The worker processes of nginx's master, and whether each is winding down after a reload. */
function workers(master: number): Map<number, boolean> {
  const found = new Map<number, boolean>();
  for (const pid of childrenOf(master)) {
    try {
      found.set(pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('shutting down'));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

export function webComponent(ctx: LinuxContext, tls: TlsComponent | null, php: boolean): Component {
  const { linux, config } = ctx;
  const blockFile = (domain: string) => ctx.path(join(linux.nginxDir, domainFile(domain, '.conf')));
  /** The site's logs, in a directory of their own that only root and the account's group may read. */
  const logDir = (domain: string) => ctx.path(siteLogDir(linux.logDir, domain));
  /** The file whose presence suspends every site of the account. */
  const suspendedFile = (user: string) => ctx.path(join(linux.suspendedDir, user));
  /** What a block says at `indent` to answer 503 while the account is suspended. */
  const suspendedCheck = (user: string, indent: string) =>
    [
      `${indent}# Suspended while this file exists (suspendacct makes it; no reload is needed).`,
      `${indent}if (-e ${suspendedFile(user)}) {`,
      `${indent}    return 503;`,
      `${indent}}`,
    ].join('\n');
  /** Makes or removes the account's suspension file; undone by the opposite. */
  const suspendedStep = (account: Account, suspended: boolean) => {
    const apply = (on: boolean) => async () => {
      if (on) writeFileAtomic(suspendedFile(account.user), '', 0o644);
      else removeFile(suspendedFile(account.user));
    };
    return ctx.step(suspended ? 'sites suspended' : 'sites unsuspended', apply(suspended), apply(!suspended));
  };
  /** Where logs were before they had a directory of their own (removed with the account). */
  const flatLog = (account: Account) =>
    ctx.path(join(linux.logDir, domainFile(account.domain, '.access.log')));
  const logsStep = (account: Account, undo: boolean, name = 'site logs') =>
    ctx.step(
      name,
      async () => prepareSiteLogs(logDir(account.domain), SITE_LOGS, ctx.systemUser(account.user).gid),
      async () => {
        if (undo) removeSiteLogs(logDir(account.domain));
      },
    );

  const nginx: Service = {
    name: 'nginx',
    async reload() {
      const pidText = readIfExists(ctx.path(linux.nginxPidFile));
      const master = pidText === null ? null : Number(pidText.trim()) || null;
      // A running master whose error log is known tests the files itself: it parses them once on
      // SIGHUP, and one that refuses them logs why and serves on with what it had. `nginx -t`
      // first would parse every site (every certificate) a second time.
      const errorLog =
        master && linux.nginxErrorLog && linux.reloadWeb.length > 0 ? ctx.path(linux.nginxErrorLog) : null;
      if (!errorLog && linux.testWeb.length > 0) await ctx.runner.run(linux.testWeb);
      if (linux.reloadWeb.length === 0) return;
      const before = master ? [...workers(master).keys()] : [];
      let logged = errorLog ? sizeOf(errorLog) : 0;
      await ctx.runner.run(linux.reloadWeb);
      if (!master) return;
      // New connections go to new workers once the old ones have closed their listeners (they
      // say "shutting down"); until then a request could still see the old configuration. The
      // master parses every site first (about 1.3 s of CPU at 1,000), so it is waited for as long
      // as it works; one that rests without new workers has not taken the reload (it refused the
      // files, or it is stopped) and serves the old configuration.
      let cpu = cpuTime(master);
      let working = Date.now();
      try {
        await waitFor(
          'nginx to take the new configuration',
          () => {
            const now = workers(master);
            const fresh = [...now.keys()].some((pid) => !before.includes(pid));
            if (fresh && before.every((pid) => !now.has(pid) || now.get(pid) === true)) return true;
            if (errorLog) {
              const appended = appendedSince(errorLog, logged);
              logged = appended.next;
              const refused = refusal(appended.lines, master);
              if (refused) throw new Error(`nginx refused the new configuration: ${refused}`);
            }
            const spent = cpuTime(master);
            if (spent !== cpu || fresh) {
              cpu = spent;
              working = Date.now();
            } else if (Date.now() - working > NGINX_RESTING_MS) throw new NginxResting();
            return false;
          },
          NGINX_TAKES_MS,
        );
      } catch (error) {
        // A master that rests without saying why: `nginx -t` says what is wrong with the files,
        // if anything is.
        if (error instanceof NginxResting && errorLog && linux.testWeb.length > 0)
          await ctx.runner.run(linux.testWeb);
        throw error;
      }
    },
  };

  function serverBlock(account: Account, docroot = 'public_html'): string {
    const ipv4 = account.dedicatedIpv4 ?? config.sharedIpv4;
    const ipv6 = account.dedicatedIpv6 ?? config.sharedIpv6;
    const listen = (port: number, extra: string) =>
      [ipv4, ...(ipv6 ? [`[${ipv6}]`] : [])]
        .map((address) => `    listen ${address}:${port}${extra};`)
        .join('\n');
    const values = {
      user: account.user,
      domain: account.domain,
      access_log: join(logDir(account.domain), 'access.log'),
      error_log: join(logDir(account.domain), 'error.log'),
      https_port: linux.httpsPort === 443 ? '' : `:${linux.httpsPort}`,
      certificate: tls ? ctx.path(tls.certificateFile(account.domain)) : '',
    };
    const blocks = {
      http_listen: listen(linux.httpPort, ''),
      https_listen: listen(linux.httpsPort, ' ssl'),
      challenge: tls ? render('web/challenge.conf', { challenge_dir: ctx.path(linux.acmeChallengeDir) }) : '',
    };
    const publicHtml = ctx.path(join(account.homedir, docroot));
    const phpLocation = php
      ? render('web/php-location.conf', { php_socket: ctx.path(phpSocket(ctx, account.user)) })
      : '';
    const site = render(
      'web/site.conf',
      { public_html: publicHtml, home: ctx.path(account.homedir) },
      { php: phpLocation, fallback: php ? '/index.php?$args' : '=404' },
    );
    return render(tls ? 'web/server.conf' : 'web/server-http.conf', values, {
      ...blocks,
      site,
      suspended: suspendedCheck(account.user, '    '),
      // In the HTTP server's redirect alone: its ACME challenges are answered while suspended.
      suspended_redirect: suspendedCheck(account.user, '        '),
    });
  }

  const writeBlock = ({ site, docroot, named }: Site) =>
    ctx.fileStep(
      named('web server block'),
      blockFile(site.domain),
      0o644,
      () => serverBlock(site, docroot),
      nginx,
    );
  const removeBlock = ({ site, named }: Site) =>
    ctx.fileStep(named('web server block'), blockFile(site.domain), 0o644, () => null, nginx);
  /**
   * The document root of an addon domain or subdomain, made as public_html is (the account's, with
   * the web server's group) where it is missing, as root that follows no link on the way: one the
   * account planted is refused (400 invalid_parameter), never followed. Undone by removing what it
   * made, where still empty.
   */
  const docrootStep = ({ site, docroot, named }: Site) => {
    let made: string[][] = [];
    const home = ctx.path(site.homedir);
    return ctx.step(
      named('document root'),
      async () => {
        const owner = { uid: ctx.systemUser(site.user).uid, gid: ctx.systemUser(linux.webUser).gid };
        try {
          made = makeDirectories(home, docroot.split('/'), owner, PUBLIC_HTML_MODE);
        } catch (error) {
          if (error instanceof UnsafePath)
            throw new StepRefused('docroot', `${docroot}: ${error.message}, which is never followed`);
          throw error;
        }
      },
      async () => removeMadeDirectories(home, made),
    );
  };
  /** What a site needs made below the home: an addon domain's or a subdomain's document root. */
  const docrootSteps = (s: Site) => (s.kind === 'addon' || s.kind === 'subdomain' ? [docrootStep(s)] : []);
  /** The site's logs and its block, for each domain; the logs made anew are removed on undo. */
  const writeSites = (sites: Site[], made: boolean) =>
    sites.flatMap((s) => [logsStep(s.site, made, s.named('site logs')), writeBlock(s)]);
  const others = (sites: Site[]) => sites.filter((s) => s.kind !== 'main');
  /**
   * A suspension's or unsuspension's steps: the account's file, the logs' owner and mode made
   * again (a site made before had a log anyone could read), and a block only where it is not
   * what Berth writes now (one written before blocks looked for the file): nginx is reloaded
   * only then.
   */
  const suspensionSteps = (account: Account, objects: AccountObjects | undefined, suspended: boolean) => {
    const sites = sitesOf(account, objects);
    return [
      ...sites.map((s) => logsStep(s.site, false, s.named('site logs'))),
      ...sites
        .filter((s) => readIfExists(blockFile(s.site.domain)) !== serverBlock(s.site, s.docroot))
        .map(writeBlock),
      suspendedStep(account, suspended),
    ];
  };

  return {
    name: 'web',
    services: [nginx],
    async prepare() {
      // nginx's workers look for an account's file here; the account next door may not list it.
      makeUnlistedDirectory(ctx.path(linux.suspendedDir));
      // nginx's default server-name hash holds names of some 45 characters: one longer domain
      // beside another would fail nginx -t for every site. Sized here for 253-character names.
      if (linux.nginxHttpSettings === '') return;
      // Every address a site may listen on: the shared ones and the pool's dedicated ones.
      const addresses = [
        ...[config.sharedIpv4, ...config.ipPool.ipv4].filter((a) => a !== ''),
        ...[config.sharedIpv6, ...config.ipPool.ipv6].filter((a) => a !== '').map((a) => `[${a}]`),
      ];
      const defaultListen = [...new Set(addresses)]
        .flatMap((address) => [
          `    listen ${address}:${linux.httpPort} default_server;`,
          `    listen ${address}:${linux.httpsPort} ssl default_server;`,
        ])
        .join('\n');
      const settings = render('web/http.conf', {}, { default_listen: defaultListen });
      const file = ctx.path(linux.nginxHttpSettings);
      if (readIfExists(file) !== settings) writeFileAtomic(file, settings, 0o644);
      if (linux.logrotateConfig !== '') {
        const rotation = render('web/logrotate.conf', { log_dir: ctx.path(linux.logDir) });
        const rotateFile = ctx.path(linux.logrotateConfig);
        if (readIfExists(rotateFile) !== rotation) writeFileAtomic(rotateFile, rotation, 0o644);
      }
    },
    create(account, _origin, objects) {
      const sites = sitesOf(account, objects);
      return [...sites.flatMap(docrootSteps), ...writeSites(sites, true)];
    },
    remove: (account, objects) => sitesOf(account, objects).map(removeBlock),
    async forget(account, objects) {
      for (const { site } of sitesOf(account, objects)) removeSiteLogs(logDir(site.domain));
      removeFile(flatLog(account));
      removeFile(suspendedFile(account.user));
    },
    suspend: (account, objects) => suspensionSteps(account, objects, true),
    unsuspend: (account, objects) => suspensionSteps(account, objects, false),
    changeObjects(account, before, after) {
      const now = new Set(after.domains.map((d) => d.domain));
      const was = new Set(before.domains.map((d) => d.domain));
      const added = others(sitesOf(account, after)).filter((s) => !was.has(s.site.domain));
      return [
        ...others(sitesOf(account, before))
          .filter((s) => !now.has(s.site.domain))
          .map(removeBlock),
        ...added.flatMap(docrootSteps),
        ...writeSites(added, true),
      ];
    },
    async forgetObjects(account, before, after) {
      const now = new Set(after.domains.map((d) => d.domain));
      for (const { site } of others(sitesOf(account, before)))
        if (!now.has(site.domain)) removeSiteLogs(logDir(site.domain));
    },
    async reconcile(account, objects) {
      for (const { site, docroot } of sitesOf(account, objects)) {
        prepareSiteLogs(logDir(site.domain), SITE_LOGS, ctx.systemUser(account.user).gid);
        writeFileAtomic(blockFile(site.domain), serverBlock(site, docroot), 0o644);
      }
      await suspendedStep(account, account.suspension !== null).run();
    },
    async purge(account) {
      removeFile(suspendedFile(account.user));
      removeFile(blockFile(account.domain));
      removeSiteLogs(logDir(account.domain));
      removeFile(flatLog(account));
    },
    async purgeDomain(domain) {
      removeFile(blockFile(domain));
      removeSiteLogs(logDir(domain));
    },
    inspect(accounts, sites) {
      const differences: string[] = [];
      for (const { site, kind } of sites) {
        const whose = kind === 'main' ? site.user : `${site.user} (${site.domain})`;
        if (readIfExists(blockFile(site.domain)) === null) differences.push(`${whose}: no web server block`);
      }
      for (const account of accounts) {
        const flagged = readIfExists(suspendedFile(account.user)) !== null;
        if (flagged !== (account.suspension !== null))
          differences.push(
            `${account.user}: ${account.suspension ? 'sites still served while suspended (no suspension file)' : 'sites answer 503 for an active account (a suspension file)'}`,
          );
      }
      const expected = new Set(sites.map((s) => domainFile(s.site.domain, '.conf')));
      const users = new Set(accounts.map((a) => a.user));
      return [
        ...differences,
        ...strayFiles(ctx, linux.nginxDir, expected, '.conf', 'web server block'),
        ...strayFiles(ctx, linux.suspendedDir, users, '', 'suspension file'),
      ];
    },
  };
}
