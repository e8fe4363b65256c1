// The sandbox from within: the process tini runs first in a new mount and PID namespace (sandbox.ts
// starts them). It lays throwaway overlays over every directory the stack writes (namespace.ts),
// configures and starts Debian's nginx, PHP-FPM, BIND, Pebble and MariaDB on free 127.0.0.1 ports
// (configure.ts, ports.ts), then `berth serve --driver linux` with system root `/`, then Postfix,
// Dovecot, OpenDKIM, sshd, cron and Pure-FTPd (they read what Berth wrote when it started), and reports on standard
// output once all of it answers. On SIGINT, SIGTERM or its input closing, it stops them, Berth first
// (supervisor.ts); nothing it did outlives the namespace.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmdirSync } from 'node:fs';
import { get } from 'node:https';
import { join } from 'node:path';
import { SERVE_NODE_FLAGS } from '../config/serve-flags.ts';
import { accountGroups, detectLayout } from '../provision/linux/cgroups.ts';
import { issueFallback, makeFallbackCa } from '../provision/linux/tls/fallback.ts';
import {
  apiUserOf,
  configure,
  DATA_DIR,
  MARIADB_DATA,
  MARIADB_SOCKET,
  type SandboxFleet,
} from './configure.ts';
import { setUpNamespace } from './namespace.ts';
import { answers, PORTS_FILE, type Ports } from './ports.ts';
import { BIN } from './sandbox.ts';
import { type Service, Supervisor, say } from './supervisor.ts';
import { write } from './system.ts';

const secret = () => randomBytes(18).toString('base64url');

function fetchText(url: string, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        body += chunk;
      });
      response.on('end', () =>
        response.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${response.statusCode}`)),
      );
    }).on('error', reject);
  });
}

/** A `berth` command on the data directory, under the umask Berth's own service runs with. */
function berth(args: string[], input: string): void {
  const umask = process.umask(0o077);
  try {
    execFileSync(process.execPath, [BIN, ...args, '--data-dir', DATA_DIR], {
      input,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
  } finally {
    process.umask(umask);
  }
}

/** Removes the control groups the sandbox's accounts had, and their parent, from the machine's hierarchies. */
async function removeControlGroups(parent: string): Promise<void> {
  const groups = accountGroups(detectLayout(parent));
  for (const user of groups.list()) await groups.remove(user);
  for (const dir of [groups.layout.unified, ...Object.values(groups.layout.v1)])
    if (dir && existsSync(dir)) rmdirSync(dir);
}

export async function runInside(dir: string, fleet: SandboxFleet = {}): Promise<number> {
  const supervisor = new Supervisor();
  const cgroupParent = `berth-sandbox-${randomBytes(6).toString('hex')}`;
  const stopAll = () =>
    supervisor.stopAll(() =>
      removeControlGroups(cgroupParent).catch((error: unknown) =>
        say(`control groups of ${cgroupParent} left: ${(error as Error).message}`),
      ),
    );
  const onSignal = () => supervisor.requestStop();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.stdin.on('end', onSignal);
  process.stdin.resume();
  // Once everything is stopped nothing may keep this process (the namespace's first) alive.
  const finish = (status: number) => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.stdin.destroy();
    return status;
  };

  try {
    setUpNamespace(dir);
    const ports = JSON.parse(readFileSync(join(dir, PORTS_FILE), 'utf8')) as Ports;
    const pebbleCa = await makeFallbackCa('Pebble listener');
    const pebbleTls = await issueFallback(pebbleCa, ['127.0.0.1', 'localhost']);
    const [chain, key] = pebbleTls.split(/(?=-----BEGIN PRIVATE KEY-----)/);
    configure(ports, cgroupParent, { cert: chain!, key: key! }, fleet);
    write('/etc/pebble/ca.pem', pebbleCa.certPem);

    supervisor.start(
      { name: 'nginx', argv: ['/usr/sbin/nginx', '-g', 'daemon off;'], stop: 'SIGQUIT' },
      '/var/log/sandbox/nginx.log',
    );
    supervisor.start(
      {
        name: 'BIND',
        argv: ['/usr/sbin/named', '-f', '-u', 'bind', '-c', '/etc/bind/named.conf'],
        stop: 'SIGTERM',
      },
      '/var/log/sandbox/named.log',
    );
    supervisor.start(
      {
        name: 'Pebble',
        argv: [
          '/usr/bin/pebble',
          '-config',
          '/etc/pebble/pebble.json',
          '-dnsserver',
          `127.0.0.1:${ports.dns}`,
        ],
        env: { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0' },
        stop: 'SIGTERM',
      },
      '/var/log/sandbox/pebble.log',
    );
    // MariaDB before Berth, which makes the accounts' databases in it: its socket alone, no port.
    supervisor.start(
      {
        name: 'MariaDB',
        argv: [
          '/usr/sbin/mariadbd',
          '--no-defaults',
          '--user=mysql',
          `--datadir=${MARIADB_DATA}`,
          `--socket=${MARIADB_SOCKET}`,
          '--skip-networking',
          '--pid-file=/run/mysqld/mysqld.pid',
          '--character-set-server=utf8mb4',
          '--collation-server=utf8mb4_unicode_ci',
          '--innodb-buffer-pool-size=32M',
          // As deploy/mariadb-berth.cnf: no table's files outside its database's directory.
          '--symbolic-links=0',
        ],
        stop: 'SIGTERM',
      },
      '/var/log/sandbox/mariadb.log',
    );
    await supervisor.waitUntil('nginx', () => answers(ports.http));
    await supervisor.waitUntil('MariaDB', async () => existsSync(MARIADB_SOCKET));
    await supervisor.waitUntil('BIND', () => answers(ports.dns));
    await supervisor.waitUntil('Pebble', () => answers(ports.acme));

    const portalPassword = secret();
    const apiPassword = secret();
    berth(['admin', 'set-password', '--password-stdin'], portalPassword);
    berth(['api-user', 'create', apiUserOf(fleet), '--password-stdin'], apiPassword);
    supervisor.start(
      {
        name: 'Berth',
        argv: [process.execPath, ...SERVE_NODE_FLAGS, BIN, 'serve', '--data-dir', DATA_DIR],
        env: { NODE_EXTRA_CA_CERTS: '/etc/pebble/ca.pem' },
        stop: 'SIGTERM',
        // As deploy/berth.service runs it: every mode Berth gives is its own, not the umask's.
        umask: 0o077,
      },
      '/var/log/sandbox/berth.log',
    );
    // Its first start builds the jail template (jailkit copies every library of the shell's tools
    // onto the homes' btrfs): minutes on a busy machine.
    await supervisor.waitUntil(
      'Berth',
      async () =>
        (await answers(ports.api)) && (await answers(ports.reseller)) && (await answers(ports.customer)),
      600,
    );
    // Mail, SSH, cron and FTP read what Berth's mail, shell, cron and ftp components wrote when it started.
    const mailServices: [Service, string, number | string][] = [
      [{ name: 'Postfix', argv: ['/usr/sbin/postfix', 'start-fg'], stop: 'SIGTERM' }, 'postfix', ports.smtp],
      [
        {
          name: 'Dovecot',
          argv: ['/usr/sbin/dovecot', '-F', '-c', '/etc/dovecot/dovecot.conf'],
          stop: 'SIGTERM',
        },
        'dovecot',
        ports.imap,
      ],
      [
        { name: 'OpenDKIM', argv: ['/usr/sbin/opendkim', '-f', '-x', '/etc/opendkim.conf'], stop: 'SIGTERM' },
        'opendkim',
        '/var/spool/postfix/opendkim/opendkim.sock',
      ],
      [
        {
          name: 'sshd',
          argv: ['/usr/sbin/sshd', '-D', '-e', '-p', String(ports.ssh), '-o', 'ListenAddress=127.0.0.1'],
          stop: 'SIGTERM',
        },
        'sshd',
        ports.ssh,
      ],
      // Debian's cron runs the accounts' cron jobs from the files Berth's cron component writes.
      [{ name: 'cron', argv: ['/usr/sbin/cron', '-f'], stop: 'SIGTERM' }, 'cron', '/run/crond.pid'],
      // Pure-FTPd with the configuration Berth's ftp component writes (explicit TLS required).
      [
        { name: 'Pure-FTPd', argv: ['/usr/sbin/pure-ftpd', '/etc/pure-ftpd/berth.conf'], stop: 'SIGTERM' },
        'pure-ftpd',
        ports.ftp,
      ],
    ];
    for (const [service, log] of mailServices) supervisor.start(service, `/var/log/sandbox/${log}.log`);
    for (const [service, , port] of mailServices)
      await supervisor.waitUntil(service.name, () =>
        typeof port === 'number' ? answers(port) : existsSync(port),
      );
    await supervisor.waitUntil('submission', () => answers(ports.submission));
    // Webmail's server block and PHP-FPM are Berth's (its webmail component, at its start).
    await supervisor.waitUntil('webmail', () => answers(ports.webmail));
    const acmeRoot = await fetchText(`https://127.0.0.1:${ports.acmeManagement}/roots/0`, pebbleCa.certPem);
    const ready = {
      api: `https://127.0.0.1:${ports.api}/`,
      reseller_api: `https://127.0.0.1:${ports.reseller}/`,
      customer_api: `https://127.0.0.1:${ports.customer}/`,
      api_user: apiUserOf(fleet),
      api_password: apiPassword,
      portal_password: portalPassword,
      http_port: ports.http,
      https_port: ports.https,
      dns_port: ports.dns,
      ssh_port: ports.ssh,
      smtp_port: ports.smtp,
      submission_port: ports.submission,
      imap_port: ports.imap,
      ftp_port: ports.ftp,
      webmail_url: `https://127.0.0.1:${ports.webmail}/`,
      acme_root_pem: acmeRoot,
      fallback_ca_pem: readFileSync('/etc/berth/certs/fallback-ca.pem', 'utf8'),
    };
    process.stdout.write(`${JSON.stringify({ ready })}\n`);
  } catch (error) {
    if (!supervisor.failed) say((error as Error).message);
    await stopAll();
    return finish(1);
  }
  await supervisor.stopRequested;
  await stopAll();
  return finish(supervisor.failed ? 1 : 0);
}
