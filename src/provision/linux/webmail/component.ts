// The webmail component: Debian's Roundcube, server-wide, served by nginx over HTTPS on its own
// port (`webmail_port`, default 2096 as in cPanel) on the shared addresses, with the server's own
// certificate (Berth's listeners'), through a PHP-FPM master of its own whose one pool runs as a
// dedicated system user (`webmail_user`): never an account's pool, never root. A mailbox logs in
// with its whole address and its own password: Roundcube asks the local Dovecot over IMAP and sends
// through submission with the same login, so the sender checks and DKIM signing apply as for any
// mail client. Nothing in it is an account's: it has no steps for accounts, only files written
// when the driver starts (prepare) and checked by doctor (inspect).
//
// What accounts must never read is out of their reach: Roundcube's configuration (its DES key,
// generated once and kept root's alone) is root's, readable by webmail's group only; its SQLite
// database, temporary files and logs are in a directory webmail's user alone may enter; its
// socket is the web server's user's alone.
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, lstatSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loadCertificate } from '../../../http/tls.ts';
import type { Account } from '../../../store/accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import type { Component, LinuxContext } from '../context.ts';
import {
  makeDirectory,
  makeServiceDirectory,
  placeLink,
  readIfExists,
  removeFile,
  writeFileAtomic,
  writeGroupFile,
} from '../files.ts';
import { findSystemUser } from '../passwd.ts';
import { render } from '../templates.ts';
import { waitFor } from '../wait.ts';

/** The DES key Roundcube encrypts a session's password with: 24 characters, as Roundcube wants. */
const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const newDesKey = () =>
  Array.from({ length: 24 }, () => KEY_ALPHABET[randomInt(KEY_ALPHABET.length)]).join('');

/** Roundcube's files beside Berth's configuration, which it reads from the same directory. */
const DEBIAN_FILES = ['defaults.inc.php', 'mimetypes.php'];
const DEBIAN_CONFIG = '/etc/roundcube';
/** Roundcube's own tool that removes what its database keeps of a login. */
const DELUSER = '/usr/share/roundcube/bin/deluser.sh';

export interface WebmailComponent extends Component {
  /** Where webmail is, for a host name: `https://<host>:<webmail_port>/`. */
  url(host: string): string;
}

/**
 * `web`: the web component, whose nginx service webmail's server block is read by (asked to
 * reload, never reloaded here).
 */
export function webmailComponent(ctx: LinuxContext, web: Component | null): WebmailComponent {
  const { linux, config } = ctx;
  const configDir = linux.webmailConfigDir;
  /** Its PHP-FPM master's socket and pid file: beside the accounts' (`/run/berth/webmail`). */
  const runDir = join(dirname(linux.phpSocketDir), 'webmail');
  const nginx = web?.services?.find((service) => service.name === 'nginx') ?? null;
  const dataDir = linux.webmailDataDir;
  const files = {
    config: join(configDir, 'config.inc.php'),
    desKey: join(configDir, 'des_key'),
    pool: join(configDir, 'php-fpm.conf'),
    database: join(dataDir, 'roundcube.sqlite'),
    socket: join(runDir, 'php.sock'),
    pid: join(runDir, 'php-fpm.pid'),
    log: join(dirname(linux.phpLogDir), 'webmail-php-fpm.log'),
  };
  const certificate = {
    cert: config.tlsCert ?? join(config.dataDir, 'tls', 'cert.pem'),
    key: config.tlsKey ?? join(config.dataDir, 'tls', 'key.pem'),
  };
  const roundcubeIndex = join(linux.roundcubeDir, 'public_html', 'index.php');
  /** The loopback address, or the one address the mail services listen on. */
  const mailHost = linux.mailAddress === '*' ? '127.0.0.1' : linux.mailAddress;

  const roundcubeConfig = (desKey: string) =>
    render('webmail/config.inc.php', {
      database: files.database,
      imap_host: mailHost,
      imap_port: String(linux.imapPort),
      smtp_host: mailHost,
      submission_port: String(linux.submissionPort),
      des_key: desKey,
      data_dir: dataDir,
    });
  const pool = () =>
    render('webmail/pool.conf', {
      pid_file: files.pid,
      error_log: files.log,
      user: linux.webmailUser,
      socket: files.socket,
      web_user: linux.webUser,
      config_dir: configDir,
      data_dir: dataDir,
    });
  const serverBlock = () => {
    const addresses = [config.sharedIpv4, ...(config.sharedIpv6 ? [`[${config.sharedIpv6}]`] : [])];
    const listen = addresses
      .filter((a) => a !== '')
      .map((address) => `    listen ${address}:${linux.webmailPort} ssl;`)
      .join('\n');
    return render(
      'webmail/nginx.conf',
      {
        certificate: certificate.cert,
        key: certificate.key,
        public_html: join(linux.roundcubeDir, 'public_html'),
        socket: ctx.path(files.socket),
      },
      { listen },
    );
  };

  /** The master's pid, when the pid file names a live PHP-FPM master. */
  const masterPid = (): number | null => {
    const pid = Number.parseInt(readIfExists(ctx.path(files.pid)) ?? '', 10);
    if (!(pid > 0)) return null;
    const name = readIfExists(`/proc/${pid}/comm`)?.trim() ?? '';
    return name.startsWith('php-fpm') ? pid : null;
  };

  const stop = async () => {
    const pid = masterPid();
    if (pid === null) return;
    process.kill(pid, 'SIGTERM');
    await waitFor('the PHP-FPM of webmail to end', () => masterPid() === null);
  };
  const start = async () => {
    if (masterPid() !== null) return;
    removeFile(ctx.path(files.socket));
    const child = spawn(linux.phpFpm, ['--nodaemonize', '--fpm-config', ctx.path(files.pool)], {
      detached: true,
      stdio: 'ignore',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
    });
    let exited = false;
    child.on('error', () => {});
    child.once('exit', () => {
      exited = true;
    });
    child.unref();
    await waitFor(
      'the PHP-FPM of webmail to open its socket',
      () => exited || (existsSync(ctx.path(files.socket)) && masterPid() === child.pid),
    );
    if (exited) throw new Error(`the PHP-FPM of webmail ended; its log: ${files.log}`);
  };

  /** Webmail's system user: made once, with no home and no shell. */
  const ensureUser = async () => {
    if (findSystemUser(ctx.root, linux.webmailUser)) return;
    await ctx.runner.run([
      '/usr/sbin/useradd',
      ...ctx.prefix,
      '--system',
      '--user-group',
      '-M',
      '-d',
      '/nonexistent',
      '-s',
      '/usr/sbin/nologin',
      '-c',
      'Roundcube webmail',
      '--',
      linux.webmailUser,
    ]);
  };

  /** Each of Debian's files Roundcube reads beside the configuration, as a link to it. */
  const linkDebianFiles = () => {
    for (const name of DEBIAN_FILES) {
      placeLink(ctx.path(join(configDir, name)), join(DEBIAN_CONFIG, name));
    }
  };

  /**
   * Removes from Roundcube's database what it keeps of each login (its settings, identities and
   * contacts), with Roundcube's own deluser.sh run as webmail's user: a mailbox made later at the
   * same address, by this account or another, starts with nothing of the one before. Best effort:
   * a login Roundcube never saw has nothing there, and what is left of one that fails is only
   * settings, never mail.
   */
  const forgetLogins = async (logins: readonly string[]) => {
    if (!ctx.live || !existsSync(ctx.path(files.database))) return;
    for (const login of logins) {
      try {
        await ctx.runner.run([
          '/usr/sbin/runuser',
          '-u',
          linux.webmailUser,
          '--',
          '/usr/bin/env',
          `ROUNDCUBE_CONFIG_DIR=${configDir}`,
          '/usr/bin/php',
          DELUSER,
          login,
        ]);
      } catch {
        // Settings of a login that is gone: nothing of its mail.
      }
    }
  };
  /** Every login of the account's that webmail may have seen: its mailboxes and its own. */
  const loginsOf = (account: Account, objects: AccountObjects | undefined) => [
    account.user,
    `${account.user}@${account.domain}`,
    ...(objects?.domains ?? []).map((d) => `${account.user}@${d.domain}`),
    ...(objects?.mailboxes ?? []).map((m) => m.email),
  ];

  return {
    name: 'webmail',

    async forgetObjects(account, before, after) {
      const kept = new Set(after.mailboxes.map((m) => m.email));
      const domains = new Set(after.domains.map((d) => d.domain));
      await forgetLogins([
        ...before.mailboxes.filter((m) => !kept.has(m.email)).map((m) => m.email),
        ...before.domains.filter((d) => !domains.has(d.domain)).map((d) => `${account.user}@${d.domain}`),
      ]);
    },

    async forget(account, objects) {
      await forgetLogins([...new Set(loginsOf(account, objects))]);
    },

    url: (host) => `https://${host}:${linux.webmailPort}/`,

    async prepare() {
      await ensureUser();
      const owner = findSystemUser(ctx.root, linux.webmailUser);
      if (!owner) throw new Error(`${linux.webmailUser} is not a system user`);
      // Root's; webmail's group reads the configuration, and no one else may even look in.
      makeServiceDirectory(ctx.path(configDir), 0, owner.gid, 0o750);
      makeServiceDirectory(ctx.path(dataDir), owner.uid, owner.gid, 0o700);
      for (const dir of ['temp', 'logs'])
        makeServiceDirectory(ctx.path(join(dataDir, dir)), owner.uid, owner.gid, 0o700);
      // Generated once: a new key would end every webmail session.
      let desKey = readIfExists(ctx.path(files.desKey))?.trim() ?? '';
      if (!/^[A-Za-z0-9]{24}$/.test(desKey)) {
        desKey = newDesKey();
        writeFileAtomic(ctx.path(files.desKey), `${desKey}\n`, 0o600);
      }
      writeGroupFile(ctx.path(files.config), roundcubeConfig(desKey), owner.gid, 0o640);
      writeFileAtomic(ctx.path(files.pool), pool(), 0o600);
      linkDebianFiles();
      makeDirectory(ctx.path(runDir));
      makeDirectory(ctx.path(dirname(files.log)));
      // Without Roundcube (its packages not installed) nothing is served; doctor says so.
      if (ctx.live && !existsSync(roundcubeIndex)) return;
      // The server's certificate is Berth's own, made at its first start when none is configured.
      if (ctx.live && config.tls && !existsSync(certificate.cert)) await loadCertificate(config);
      if (!existsSync(certificate.cert)) return;
      const block = serverBlock();
      const nginxFile = ctx.path(linux.webmailNginx);
      const changed = readIfExists(nginxFile) !== block;
      if (changed) writeFileAtomic(nginxFile, block, 0o644);
      if (!ctx.live) return;
      // A master started with the settings of before reads them again. Webmail that cannot start
      // keeps Berth from nothing else: doctor, which serve runs at start, reports it.
      try {
        await stop();
        await start();
      } catch {}
      if (changed) await nginx?.reload();
    },

    inspect() {
      const differences: string[] = [];
      const owner = findSystemUser(ctx.root, linux.webmailUser);
      if (!owner) return [`webmail: no system user ${linux.webmailUser}`];
      if (ctx.live && !existsSync(roundcubeIndex))
        differences.push(
          `webmail: Roundcube is not installed (${roundcubeIndex}): install roundcube-core and roundcube-sqlite3`,
        );
      const expect = (path: string, uid: number, gid: number, mode: number, what: string) => {
        const found = lstatOrNull(ctx.path(path));
        if (!found) return void differences.push(`webmail: no ${what} ${path}`);
        const actual = found.mode & 0o7777;
        if (found.isSymbolicLink() || found.uid !== uid || found.gid !== gid || actual !== mode)
          differences.push(
            `webmail: ${what} ${path} is ${found.uid}:${found.gid} ${actual.toString(8)}, not ${uid}:${gid} ${mode.toString(8)}`,
          );
      };
      expect(configDir, 0, owner.gid, 0o750, 'configuration directory');
      expect(files.config, 0, owner.gid, 0o640, 'Roundcube configuration');
      expect(files.desKey, 0, 0, 0o600, 'DES key');
      expect(files.pool, 0, 0, 0o600, 'PHP-FPM settings');
      expect(dataDir, owner.uid, owner.gid, 0o700, 'data directory');
      const desKey = readIfExists(ctx.path(files.desKey))?.trim() ?? '';
      if (desKey && readIfExists(ctx.path(files.config)) !== roundcubeConfig(desKey))
        differences.push(`webmail: ${files.config} differs from what Berth writes`);
      if (readIfExists(ctx.path(files.pool)) !== pool())
        differences.push(`webmail: ${files.pool} differs from what Berth writes`);
      if (existsSync(certificate.cert) && readIfExists(ctx.path(linux.webmailNginx)) !== serverBlock())
        differences.push(`webmail: ${linux.webmailNginx} differs from what Berth writes`);
      if (ctx.live && masterPid() === null) differences.push('webmail: its PHP-FPM does not run');
      return differences;
    },
  };
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}
