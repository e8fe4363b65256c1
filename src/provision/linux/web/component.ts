// The web component: every site of every account in one nginx configuration that stays the same
// as sites come and go (`<nginx_dir>/berth-sites.conf`, written when Berth starts). A site is a
// directory of root's in `sites_dir`, named after the domain, which nginx finds by the request's
// host name on each request: `root`, a link owned by the account to the document root (the main
// domain and a parked domain serve public_html, an addon domain or a subdomain its own); `php`, a
// link to the account's PHP-FPM socket; `certificate.pem`, a link to the domain's certificate and
// key, read on each TLS handshake; and `suspended`, an empty file while the account is suspended
// (503 on both ports, but for ACME challenges). `www.<domain>` is a link to the domain's directory.
// createacct, add_domain, suspendacct, removeacct and a renewed certificate change files there and
// reload nothing: a change costs the same whatever the number of sites, and no request in flight
// is cut. With the tls component, HTTP answers ACME challenges and redirects the rest to HTTPS.
// HTTPS serves the document root with index.php first, PHP through the account's own pool, dotfiles
// refused, links followed only where their owner owns the target. nginx is reloaded only when Berth
// starts with a configuration that differs from what it has.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { StepRefused } from '../../driver.ts';
import { type Component, type LinuxContext, type Site, sitesOf } from '../context.ts';
import { nameFits } from '../dns/dkim.ts';
import {
  domainFile,
  linkTarget,
  makeServiceDirectory,
  placeLink,
  prepareSiteLogs,
  readIfExists,
  removeFile,
  removeServiceDirectory,
  removeSiteLogs,
  siteLogDir,
  writeFileAtomic,
} from '../files.ts';
import { makeDirectories, removeMadeDirectories, UnsafePath } from '../home.ts';
import { phpSocket } from '../php/socket.ts';
import { render } from '../templates.ts';
import type { TlsComponent } from '../tls/component.ts';
import { PUBLIC_HTML_MODE } from '../user/component.ts';
import { nginxService } from './nginx.ts';

/** The file in `nginx_dir` with every site's servers. */
export const SITES_FILE = 'berth-sites.conf';
/** The first line of the per-domain server blocks Berth wrote before, removed when it starts. */
const OLD_BLOCK = '# Managed by Berth for the account ';
/**
 * A site's directory and the directory of sites, root's with the web server's group: nginx's
 * workers open them (`disable_symlinks` opens every directory on the way); no account may.
 */
const SITES_MODE = 0o750;

export function webComponent(ctx: LinuxContext, tls: TlsComponent | null, php: boolean): Component {
  const { linux, config } = ctx;
  const sitesDir = ctx.path(linux.sitesDir);
  const nameOf = (domain: string) => domainFile(domain, '');
  const siteDir = (domain: string) => join(sitesDir, nameOf(domain));
  /** The www name served with the domain, when DNS can hold it. */
  const aliasOf = (domain: string) => (nameFits('www', domain) ? `www.${domain}` : null);
  /** The site's logs, in a directory of their own that only root and the account's group may list. */
  const logDir = (domain: string) => ctx.path(siteLogDir(linux.logDir, domain));
  const nginx = nginxService(ctx);

  /**
   * Makes `alias` in `dir` a link to `target` (a domain's directory there), unless a site of that
   * very name has a directory of its own; removing it puts nothing else there.
   */
  const placeAlias = (dir: string, alias: string | null, target: string) => {
    if (!alias) return;
    const path = join(dir, nameOf(alias));
    try {
      if (lstatSync(path).isDirectory()) return;
    } catch {
      // nothing there yet
    }
    placeLink(path, nameOf(target));
  };
  const removeAlias = (dir: string, alias: string | null, target: string) => {
    if (alias && linkTarget(join(dir, nameOf(alias))) === nameOf(target))
      removeFile(join(dir, nameOf(alias)));
  };
  const hasDirectory = (path: string) => lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
  /** A site named www.<domain> gone from `dir`: the domain's own www link again, if it is a site here. */
  const restoreAliasFor = (dir: string, domain: string) => {
    const bare = domain.slice(4);
    if (domain.startsWith('www.') && hasDirectory(join(dir, nameOf(bare)))) placeAlias(dir, domain, bare);
  };

  /** Makes the site's directory and its links, as the account is now (suspended or not). */
  function placeSite({ site, docroot }: Site, suspended: boolean): void {
    const dir = siteDir(site.domain);
    makeServiceDirectory(dir, 0, ctx.systemUser(linux.webUser).gid, SITES_MODE);
    const owner = ctx.systemUser(site.user);
    placeLink(join(dir, 'root'), ctx.path(join(site.homedir, docroot)), { uid: owner.uid, gid: owner.gid });
    if (php) placeLink(join(dir, 'php'), ctx.path(phpSocket(ctx, site.user)));
    if (tls) placeLink(join(dir, 'certificate.pem'), ctx.path(tls.certificateFile(site.domain)));
    flag(site.domain, suspended);
    placeAlias(sitesDir, aliasOf(site.domain), site.domain);
  }
  function removeSite(domain: string): void {
    removeAlias(sitesDir, aliasOf(domain), domain);
    if (hasDirectory(siteDir(domain))) removeServiceDirectory(siteDir(domain));
    restoreAliasFor(sitesDir, domain);
  }
  /** Makes or removes the site's suspension file. */
  function flag(domain: string, suspended: boolean): void {
    const file = join(siteDir(domain), 'suspended');
    if (suspended) {
      if (readIfExists(file) === null) writeFileAtomic(file, '', 0o644);
    } else removeFile(file);
  }
  function placeLogs(site: Account): void {
    prepareSiteLogs(logDir(site.domain), ctx.systemUser(linux.webUser).uid, ctx.systemUser(site.user).gid);
    placeAlias(ctx.path(linux.logDir), aliasOf(site.domain), site.domain);
  }
  function removeLogs(domain: string): void {
    removeAlias(ctx.path(linux.logDir), aliasOf(domain), domain);
    removeSiteLogs(logDir(domain));
    restoreAliasFor(ctx.path(linux.logDir), domain);
  }

  const logsStep = ({ site, named }: Site, made: boolean) =>
    ctx.step(
      named('site logs'),
      async () => placeLogs(site),
      async () => {
        if (made) removeLogs(site.domain);
      },
    );
  /** The site's directory; undone by removing it, unless it was there before. */
  const siteStep = (s: Site) => {
    let existed = false;
    return ctx.step(
      s.named('site'),
      async () => {
        existed = hasDirectory(siteDir(s.site.domain));
        placeSite(s, false);
      },
      async () => {
        if (!existed) removeSite(s.site.domain);
      },
    );
  };
  const removeSiteStep = (s: Site, suspended: boolean) =>
    ctx.step(
      s.named('site'),
      async () => removeSite(s.site.domain),
      async () => placeSite(s, suspended),
    );
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
  /** The site's logs and its directory, for each domain; the logs made anew are removed on undo. */
  const placeSites = (sites: Site[]) => sites.flatMap((s) => [logsStep(s, true), siteStep(s)]);
  const others = (sites: Site[]) => sites.filter((s) => s.kind !== 'main');
  /** A suspension's or unsuspension's steps: each site's file, made or removed; undone by the opposite. */
  const suspensionStep = (account: Account, objects: AccountObjects | undefined, suspended: boolean) => {
    const domains = sitesOf(account, objects).map((s) => s.site.domain);
    const apply = (on: boolean) => async () => {
      for (const domain of domains) if (hasDirectory(siteDir(domain))) flag(domain, on);
    };
    return ctx.step(suspended ? 'sites suspended' : 'sites unsuspended', apply(suspended), apply(!suspended));
  };

  /** Every site's servers: on HTTP (a redirect to HTTPS, or the site without tls) and HTTPS. */
  function sitesConfiguration(): string {
    // Every address a site may listen on: the shared ones and the pool's dedicated ones.
    const addresses = [
      ...new Set([
        ...[config.sharedIpv4, ...config.ipPool.ipv4].filter((a) => a !== ''),
        ...[config.sharedIpv6, ...config.ipPool.ipv6].filter((a) => a !== '').map((a) => `[${a}]`),
      ]),
    ];
    const listen = (port: number, extra: string) =>
      addresses.map((address) => `    listen ${address}:${port}${extra};`).join('\n');
    const values = { sites_dir: sitesDir, log_dir: ctx.path(linux.logDir) };
    const site = render('web/site.conf', values, {
      fallback: php ? '/index.php?$args' : '=404',
      php: php ? render('web/php-location.conf', {}) : '',
    });
    const server = (port: number, extra: string, tlsLines: string, body: string) =>
      render('web/site-server.conf', values, { listen: listen(port, extra), tls: tlsLines, body });
    const servers = tls
      ? [
          server(
            linux.httpPort,
            '',
            '',
            render('web/redirect.conf', {
              challenge_dir: ctx.path(linux.acmeChallengeDir),
              https_port: linux.httpsPort === 443 ? '' : `:${linux.httpsPort}`,
            }),
          ),
          server(linux.httpsPort, ' ssl', render('web/tls.conf', values), site),
        ]
      : [server(linux.httpPort, '', '', site)];
    const defaultListen = addresses
      .flatMap((address) => [
        `    listen ${address}:${linux.httpPort} default_server;`,
        `    listen ${address}:${linux.httpsPort} ssl default_server;`,
      ])
      .join('\n');
    return render('web/sites.conf', values, { default_listen: defaultListen, servers: servers.join('') });
  }

  /** Writes `file` when it differs; whether it did. */
  const writeIfChanged = (file: string, content: string) => {
    if (readIfExists(file) === content) return false;
    writeFileAtomic(file, content, 0o644);
    return true;
  };

  return {
    name: 'web',
    services: [nginx],
    async prepare() {
      makeServiceDirectory(sitesDir, 0, ctx.systemUser(linux.webUser).gid, SITES_MODE);
      const nginxDir = ctx.path(linux.nginxDir);
      let changed = writeIfChanged(join(nginxDir, SITES_FILE), sitesConfiguration());
      // The server blocks of each domain Berth wrote before all sites were served by one.
      for (const name of readdirSync(nginxDir)) {
        const file = join(nginxDir, name);
        if (name.endsWith('.conf') && readIfExists(file)?.startsWith(OLD_BLOCK)) {
          removeFile(file);
          changed = true;
        }
      }
      if (linux.nginxHttpSettings !== '')
        changed = writeIfChanged(ctx.path(linux.nginxHttpSettings), render('web/http.conf', {})) || changed;
      if (linux.logrotateConfig !== '')
        writeIfChanged(
          ctx.path(linux.logrotateConfig),
          render('web/logrotate.conf', { log_dir: ctx.path(linux.logDir) }),
        );
      if (changed && ctx.live) await nginx.reload();
    },
    create(account, _origin, objects) {
      const sites = sitesOf(account, objects);
      return [...sites.flatMap(docrootSteps), ...placeSites(sites)];
    },
    remove: (account, objects) =>
      sitesOf(account, objects).map((s) => removeSiteStep(s, account.suspension !== null)),
    async forget(account, objects) {
      for (const { site } of sitesOf(account, objects)) removeLogs(site.domain);
    },
    suspend: (account, objects) => [suspensionStep(account, objects, true)],
    unsuspend: (account, objects) => [suspensionStep(account, objects, false)],
    changeObjects(account, before, after) {
      const now = new Set(after.domains.map((d) => d.domain));
      const was = new Set(before.domains.map((d) => d.domain));
      const added = others(sitesOf(account, after)).filter((s) => !was.has(s.site.domain));
      return [
        ...others(sitesOf(account, before))
          .filter((s) => !now.has(s.site.domain))
          .map((s) => removeSiteStep(s, account.suspension !== null)),
        ...added.flatMap(docrootSteps),
        ...placeSites(added),
      ];
    },
    async forgetObjects(account, before, after) {
      const now = new Set(after.domains.map((d) => d.domain));
      for (const { site } of others(sitesOf(account, before)))
        if (!now.has(site.domain)) removeLogs(site.domain);
    },
    async resume(account, objects) {
      // A server whose sites were served by blocks of their own gets their directories here, and
      // every site's links are made again as Berth writes them now (a link already right is kept).
      for (const s of sitesOf(account, objects)) {
        if (!hasDirectory(siteDir(s.site.domain))) placeLogs(s.site);
        placeSite(s, account.suspension !== null);
      }
    },
    async reconcile(account, objects) {
      for (const s of sitesOf(account, objects)) {
        placeLogs(s.site);
        placeSite(s, account.suspension !== null);
      }
    },
    async purge(account) {
      removeSite(account.domain);
      removeLogs(account.domain);
    },
    async purgeDomain(domain) {
      removeSite(domain);
      removeLogs(domain);
    },
    inspect(accounts, sites) {
      const differences: string[] = [];
      const suspendedUsers = new Set(accounts.filter((a) => a.suspension !== null).map((a) => a.user));
      const expected = new Set<string>();
      for (const { site, kind, docroot } of sites) {
        const whose = kind === 'main' ? site.user : `${site.user} (${site.domain})`;
        expected.add(nameOf(site.domain));
        const alias = aliasOf(site.domain);
        if (alias) expected.add(nameOf(alias));
        const dir = siteDir(site.domain);
        if (!hasDirectory(dir)) {
          differences.push(`${whose}: no site directory ${join(linux.sitesDir, nameOf(site.domain))}`);
          continue;
        }
        if (linkTarget(join(dir, 'root')) !== ctx.path(join(site.homedir, docroot)))
          differences.push(`${whose}: the site's root does not point to ${join(site.homedir, docroot)}`);
        const flagged = readIfExists(join(dir, 'suspended')) !== null;
        if (flagged !== suspendedUsers.has(site.user))
          differences.push(
            `${whose}: ${flagged ? 'the site answers 503 for an active account (a suspension file)' : 'the site is still served while suspended (no suspension file)'}`,
          );
      }
      for (const name of readdirSync(sitesDir))
        if (!name.startsWith('.') && !expected.has(name))
          differences.push(
            `${name}: site directory ${join(linux.sitesDir, name)} with no account in the store`,
          );
      return differences;
    },
  };
}
