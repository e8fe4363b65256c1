// The configuration of the sandbox's services, written into its overlays before any of them starts:
// Debian's nginx, BIND, Pebble, MariaDB, Postfix, Dovecot, OpenDKIM, sshd and Pure-FTPd, each on the sandbox's ports,
// and Berth's berth.toml (the linux driver on this throwaway system, certificates from Pebble).
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { FTP_PASSIVE_PORTS, type Ports } from './ports.ts';
import { run, write } from './system.ts';

export const SANDBOX_HOST = 'sandbox.test';
export const DATA_DIR = '/var/lib/berth';
export const MARIADB_DATA = '/var/lib/mysql';
/** MariaDB answers on this socket alone (no network), where Debian's clients and PHP look for it. */
export const MARIADB_SOCKET = '/run/mysqld/mysqld.sock';

/**
 * A sandbox that is one server of a fleet of sandboxes: its name, and the PostgreSQL store the
 * others share (reached over this machine's loopback, which every sandbox shares).
 */
export interface SandboxFleet {
  node?: string;
  database?: string;
}

/** The API account made for the caller: one per server when sandboxes share a store. */
export const apiUserOf = (fleet: SandboxFleet) => (fleet.node ? `sandbox-${fleet.node}` : 'sandbox');

function emptyDirectory(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

/** Writes every service's configuration for a sandbox on those ports. */
export function configure(
  ports: Ports,
  cgroupParent: string,
  pebbleTls: { cert: string; key: string },
  fleet: SandboxFleet,
): void {
  // nginx: Debian's nginx.conf as installed, no site but Berth's. Berth's settings make the default
  // server that refuses a name no account has (web/http.conf); until Berth has written them, this
  // server of no name holds the sandbox's ports, refusing everything, so that nginx answers there.
  emptyDirectory('/etc/nginx/sites-enabled');
  write(
    '/etc/nginx/conf.d/sandbox.conf',
    [
      "# The sandbox: its ports are nginx's from the start; Berth's default server takes them over.",
      'server {',
      `    listen 127.0.0.1:${ports.http};`,
      `    listen 127.0.0.1:${ports.https} ssl;`,
      '    server_name sandbox.invalid;',
      '    ssl_reject_handshake on;',
      '    return 444;',
      '}',
      '',
    ].join('\n'),
  );
  mkdirSync('/var/log/nginx', { recursive: true });
  // BIND: authoritative only, for the zones Berth adds (rndc addzone).
  if (!existsSync('/etc/bind/rndc.key')) run(['/usr/sbin/rndc-confgen', '-a', '-c', '/etc/bind/rndc.key']);
  const bind = Number(run(['/usr/bin/id', '-u', 'bind']).trim());
  const bindGroup = Number(run(['/usr/bin/id', '-g', 'bind']).trim());
  chownSync('/etc/bind/rndc.key', 0, bindGroup);
  write(
    '/etc/bind/named.conf',
    [
      'options {',
      '    directory "/var/cache/bind";',
      `    listen-on port ${ports.dns} { 127.0.0.1; };`,
      '    listen-on-v6 { none; };',
      '    recursion no;',
      '    allow-new-zones yes;',
      '    allow-transfer { none; };',
      '    dnssec-validation no;',
      '    pid-file "/run/named/named.pid";',
      '};',
      'include "/etc/bind/rndc.key";',
      `controls { inet 127.0.0.1 port ${ports.rndc} allow { 127.0.0.1; } keys { "rndc-key"; }; };`,
      '',
    ].join('\n'),
  );
  for (const dir of ['/run/named', '/var/cache/bind']) {
    mkdirSync(dir, { recursive: true });
    chownSync(dir, bind, bindGroup);
  }
  // Pebble: its ACME API over TLS, validating http-01 on the sandbox's HTTP port.
  write('/etc/pebble/cert.pem', pebbleTls.cert);
  write('/etc/pebble/key.pem', pebbleTls.key, 0o600);
  write(
    '/etc/pebble/pebble.json',
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${ports.acme}`,
        managementListenAddress: `127.0.0.1:${ports.acmeManagement}`,
        certificate: '/etc/pebble/cert.pem',
        privateKey: '/etc/pebble/key.pem',
        httpPort: ports.http,
        tlsPort: ports.https,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  // Postfix: Debian's main.cf and master.cf, its SMTP service on the sandbox's port, logging to its
  // output. The mail component (Berth's start) adds the rest.
  run([
    '/usr/sbin/postconf',
    '-e',
    `myhostname=${SANDBOX_HOST}`,
    'mydestination=localhost',
    'inet_interfaces=127.0.0.1',
    'inet_protocols=ipv4',
    'maillog_file=/dev/stdout',
    // Its SMTP port stands for a server's port 25 on the Internet: no client is trusted to relay.
    'mynetworks=',
    'relayhost=',
  ]);
  run(['/usr/sbin/postconf', '-MX', 'smtp/inet']);
  run([
    '/usr/sbin/postconf',
    '-M',
    `127.0.0.1:${ports.smtp}/inet=127.0.0.1:${ports.smtp} inet n - y - - smtpd`,
  ]);
  // Dovecot and OpenDKIM: their configuration is Berth's; the sandbox only logs them to a file.
  write('/etc/dovecot/local.conf', 'log_path = /dev/stderr\n');
  for (const [dir, owner] of [
    ['/run/opendkim', 'opendkim'],
    ['/run/dovecot', 'root'],
    ['/run/sshd', 'root'],
  ] as const) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    chownSync(dir, Number(run(['/usr/bin/id', '-u', owner])), Number(run(['/usr/bin/id', '-g', owner])));
  }
  // sshd: host keys of its own; PAM's loginuid cannot be set inside a namespace, so it is optional.
  for (const name of readdirSync('/etc/ssh').filter((n) => n.startsWith('ssh_host_')))
    rmSync(join('/etc/ssh', name));
  run(['/usr/bin/ssh-keygen', '-A']);
  const pamSshd = readFileSync('/etc/pam.d/sshd', 'utf8');
  write(
    '/etc/pam.d/sshd',
    pamSshd.replace(/^session\s+required\s+pam_loginuid\.so/m, 'session optional pam_loginuid.so'),
  );
  // MariaDB: a data directory of the sandbox's own, made afresh; root logs in by unix_socket alone.
  emptyDirectory(MARIADB_DATA);
  run([
    '/usr/bin/mariadb-install-db',
    '--no-defaults',
    '--user=mysql',
    `--datadir=${MARIADB_DATA}`,
    '--auth-root-authentication-method=socket',
    '--skip-test-db',
  ]);
  mkdirSync('/run/mysqld', { recursive: true, mode: 0o755 });
  chownSync(
    '/run/mysqld',
    Number(run(['/usr/bin/id', '-u', 'mysql'])),
    Number(run(['/usr/bin/id', '-g', 'mysql'])),
  );
  // Berth: the linux driver on the sandbox's ports, certificates from Pebble. Its data directory
  // holds the store, the keys and the passwords: root's alone, as `berth init` makes it.
  mkdirSync(DATA_DIR, { recursive: true, mode: 0o700 });
  chmodSync(DATA_DIR, 0o700);
  write(
    join(DATA_DIR, 'berth.toml'),
    [
      "# The sandbox's Berth (berth sandbox): the linux driver on this throwaway system.",
      'driver = "linux"',
      'host = "127.0.0.1"',
      `port = ${ports.api}`,
      `reseller_port = ${ports.reseller}`,
      `customer_port = ${ports.customer}`,
      `host_name = "${SANDBOX_HOST}"`,
      'shared_ipv4 = "127.0.0.1"',
      'shared_ipv6 = ""',
      // The others of a fleet reach this one's admin listener on the loopback they all share.
      ...(fleet.node
        ? [`node_name = ${JSON.stringify(fleet.node)}`, `advertise_url = "https://127.0.0.1:${ports.api}"`]
        : []),
      ...(fleet.database ? [`database = ${JSON.stringify(fleet.database)}`] : []),
      // The billing system of the sandbox (its test, a developer's script) calls from 127.0.0.1,
      // as every account's code does: no account may lock it out by failing logins there.
      'trusted_addresses = ["127.0.0.1"]',
      '',
      '[linux]',
      `http_port = ${ports.http}`,
      `https_port = ${ports.https}`,
      `reload_dns = ["/usr/sbin/rndc", "-s", "127.0.0.1", "-p", "${ports.rndc}", "reload"]`,
      `rndc = ["/usr/sbin/rndc", "-s", "127.0.0.1", "-p", "${ports.rndc}"]`,
      `bind_listen = "127.0.0.1:${ports.dns}"`,
      `rndc_control = "127.0.0.1:${ports.rndc}"`,
      'mail_address = "127.0.0.1"',
      // The machine's cgroup hierarchies are shared: this sandbox's accounts have a parent of their own.
      `cgroup_parent = "${cgroupParent}"`,
      `imap_port = ${ports.imap}`,
      `submission_port = ${ports.submission}`,
      `lists_port = ${ports.lists}`,
      'ftp_address = "127.0.0.1"',
      `ftp_port = ${ports.ftp}`,
      `ftp_passive_ports = "${ports.ftpPassive}:${ports.ftpPassive + FTP_PASSIVE_PORTS - 1}"`,
      // SPF is checked with the sandbox's BIND, which serves the hosted zones (no outside DNS).
      `mail_dns_server = "127.0.0.1:${ports.dns}"`,
      // Webmail (Roundcube) on a port of the sandbox's, as a server has it on 2096.
      `webmail_port = ${ports.webmail}`,
      '',
      '[acme]',
      `directory = "https://127.0.0.1:${ports.acme}/dir"`,
      'check_seconds = 1',
      '',
    ].join('\n'),
    0o600,
  );
}
