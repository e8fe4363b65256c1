// The server's configuration: defaults, then <data-dir>/berth.toml, then environment variables,
// then command-line flags (each later source wins). Documented in docs/configuration.md.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { parseAddressRange } from './values.ts';

export interface Config {
  dataDir: string;
  /** A PostgreSQL URL shared by several servers, or null for <dataDir>/berth.db. */
  database: string | null;
  host: string;
  port: number;
  resellerPort: number;
  tls: boolean;
  tlsCert: string | null;
  tlsKey: string | null;
  driver: 'record' | 'linux';
  demo: boolean;
  hostName: string;
  sharedIpv4: string;
  sharedIpv6: string;
  /**
   * Dedicated addresses. Accounts made under resellers may hold at most `resellerShare` (0 to 1)
   * of each family's pool between them; the rest is kept for the administrator's customers.
   */
  ipPool: { ipv4: string[]; ipv6: string[]; resellerShare: number };
  nameservers: string[];
  homeBase: string;
  shell: string;
  trustedProxies: string[];
  lockout: { maxFailures: number; windowMinutes: number; lockMinutes: number };
  linux: LinuxConfig;
  acme: AcmeConfig;
  limits: LimitsConfig;
  /** Where events are POSTed, signed with each one's secret. */
  webhooks: Webhook[];
}

export interface Webhook {
  url: string;
  secret: string;
  /** The event types to send; empty: all. */
  events: string[];
}

/** Protection against slow or greedy clients. Times in seconds. */
export interface LimitsConfig {
  /** A client must have sent all its request headers within this. */
  headerTimeout: number;
  /** …and the whole request within this. */
  requestTimeout: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeout: number;
  /** Connections beyond this, per listener, are closed at once. */
  maxConnections: number;
  /** Connections one source address may hold at once, per listener (trusted proxies exempt). */
  maxConnectionsPerAddress: number;
}

/** Where the sites' certificates come from (the linux driver's tls component). */
export interface AcmeConfig {
  /** The ACME directory URL: Let's Encrypt's production directory unless set. */
  directory: string;
  /** The contact address given to the ACME server, or empty. */
  email: string;
  /** How often, in seconds, the certificate keeper looks for certificates due (from memory). */
  checkSeconds: number;
}

export const LINUX_COMPONENTS = ['user', 'php', 'tls', 'web', 'dns', 'mail', 'shell'] as const;
export type LinuxComponentName = (typeof LINUX_COMPONENTS)[number];

/** Where the linux driver puts things. Paths are absolute within `systemRoot`. */
export interface LinuxConfig {
  /** Stands for `/`: every file is read and written below it; services are reloaded only at `/`. */
  systemRoot: string;
  /** The parts of the hosting stack this server runs (`user` always). */
  components: LinuxComponentName[];
  nginxDir: string;
  /**
   * A file nginx reads inside its http block, where Berth sizes the server-name hash so that any
   * valid domain (up to 253 characters) can be served; empty when the administrator sets it.
   */
  nginxHttpSettings: string;
  zoneDir: string;
  dkimDir: string;
  logDir: string;
  httpPort: number;
  httpsPort: number;
  /** The user nginx's workers run as: the only one that may use the PHP pools' sockets. */
  webUser: string;
  /** The pid file of nginx's master, watched so that a reload is waited for. */
  nginxPidFile: string;
  /** The file of zone statements BIND includes, rewritten whole from the zone directory. */
  zoneList: string;
  phpPoolDir: string;
  phpSocketDir: string;
  /** Certificates and their state, one directory per domain. */
  certDir: string;
  /** Where nginx serves /.well-known/acme-challenge/ from, for every domain. */
  acmeChallengeDir: string;
  /** The filesystem setquota sets quotas on, or null for no disk quotas. */
  quotaFilesystem: string | null;
  /** Commands as argument arrays, run only when systemRoot is `/`. */
  testWeb: string[];
  reloadWeb: string[];
  reloadDns: string[];
  reloadPhp: string[];
  /** named-checkzone, run on every zone written; empty to skip. */
  checkZone: string[];
  /** The mail component's record of each local mail domain, from which every mail table is written. */
  mailDir: string;
  /** Postfix's tables of Berth's domains, mailboxes and senders (texthash). */
  postfixMapDir: string;
  /** Dovecot's tables of Berth's logins and mail users (passwd-file), re-read by Dovecot itself. */
  dovecotMapDir: string;
  /** OpenDKIM's key and signing tables. */
  opendkimMapDir: string;
  /** The address IMAP and submission listen on (`*`: every address). */
  mailAddress: string;
  imapPort: number;
  submissionPort: number;
  /** The loopback port OpenDKIM's milter listens on, for Postfix's submission service. */
  dkimPort: number;
  reloadMail: string[];
  /** The pid file of Postfix's master, watched so that a reload is waited for. */
  postfixPidFile: string;
  reloadImap: string[];
  reloadDkim: string[];
  /** The jail template (made with jailkit) every shell account's jail is hard-linked from. */
  jailTemplate: string;
  /** The file sshd includes with Berth's chroot rules. */
  sshdConfig: string;
  reloadSsh: string[];
}

/** What a caller (the CLI's flags, a test) may set over the file and the environment. */
export type ConfigOverrides = Partial<Omit<Config, 'lockout' | 'ipPool' | 'linux' | 'acme' | 'limits'>> & {
  limits?: Partial<LimitsConfig>;
  lockout?: Partial<Config['lockout']>;
  ipPool?: Partial<Config['ipPool']>;
  linux?: Partial<LinuxConfig>;
  acme?: Partial<AcmeConfig>;
};

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function defaultDataDir(): string {
  return resolve(process.env.BERTH_DATA_DIR ?? 'data');
}

function firstAddress(family: 'IPv4' | 'IPv6'): string {
  for (const addresses of Object.values(networkInterfaces())) {
    for (const address of addresses ?? []) {
      if (address.family === family && !address.internal && !address.address.startsWith('fe80')) {
        return address.address;
      }
    }
  }
  return family === 'IPv4' ? '127.0.0.1' : '';
}

/** Debian's PHP version with PHP-FPM installed (the newest when there are several). */
export function phpVersion(): string {
  try {
    const versions = readdirSync('/etc/php').filter(
      (name) => /^\d+\.\d+$/.test(name) && existsSync(join('/etc/php', name, 'fpm')),
    );
    versions.sort(
      (a, b) =>
        Number(b.split('.')[0]) - Number(a.split('.')[0]) ||
        Number(b.split('.')[1]) - Number(a.split('.')[1]),
    );
    return versions[0] ?? '8.2';
  } catch {
    return '8.2';
  }
}

function defaults(dataDir: string): Config {
  const php = phpVersion();
  const host = hostname().toLowerCase();
  return {
    dataDir,
    database: null,
    host: '0.0.0.0',
    port: 5555,
    resellerPort: 4444,
    tls: true,
    tlsCert: null,
    tlsKey: null,
    driver: 'record',
    demo: false,
    hostName: host,
    sharedIpv4: firstAddress('IPv4'),
    sharedIpv6: firstAddress('IPv6'),
    ipPool: { ipv4: [], ipv6: [], resellerShare: 0.5 },
    nameservers: [],
    homeBase: '/home',
    shell: '/bin/bash',
    trustedProxies: [],
    lockout: { maxFailures: 10, windowMinutes: 15, lockMinutes: 15 },
    limits: {
      headerTimeout: 10,
      requestTimeout: 30,
      keepAliveTimeout: 30,
      maxConnections: 2000,
      maxConnectionsPerAddress: 200,
    },
    webhooks: [],
    acme: {
      directory: 'https://acme-v02.api.letsencrypt.org/directory',
      email: '',
      checkSeconds: 10,
    },
    linux: {
      systemRoot: '/',
      components: [...LINUX_COMPONENTS],
      nginxDir: '/etc/nginx/sites-enabled',
      nginxHttpSettings: '/etc/nginx/conf.d/berth.conf',
      zoneDir: '/etc/bind/zones',
      dkimDir: '/etc/berth/dkim',
      logDir: '/var/log/nginx',
      httpPort: 80,
      httpsPort: 443,
      webUser: 'www-data',
      nginxPidFile: '/run/nginx.pid',
      zoneList: '/etc/bind/named.conf.berth',
      phpPoolDir: `/etc/php/${php}/fpm/pool.d`,
      phpSocketDir: '/run/php',
      certDir: '/etc/berth/certs',
      acmeChallengeDir: '/var/lib/berth/acme-challenge',
      quotaFilesystem: null,
      testWeb: ['/usr/sbin/nginx', '-t', '-q'],
      reloadWeb: ['/usr/sbin/nginx', '-s', 'reload'],
      reloadDns: ['/usr/sbin/rndc', 'reload'],
      reloadPhp: ['/usr/bin/pkill', '-USR2', '--pidfile', `/run/php/php${php}-fpm.pid`],
      checkZone: ['/usr/bin/named-checkzone', '-q'],
      mailDir: '/etc/berth/mail',
      postfixMapDir: '/etc/postfix/berth',
      dovecotMapDir: '/etc/dovecot/berth',
      opendkimMapDir: '/etc/opendkim/berth',
      mailAddress: '*',
      imapPort: 143,
      submissionPort: 587,
      dkimPort: 8891,
      reloadMail: ['/usr/sbin/postfix', 'reload'],
      postfixPidFile: '/var/spool/postfix/pid/master.pid',
      reloadImap: ['/usr/bin/doveadm', 'reload'],
      reloadDkim: ['/usr/bin/pkill', '-USR1', '--pidfile', '/run/opendkim/opendkim.pid'],
      jailTemplate: '/home/.berth-jail',
      sshdConfig: '/etc/ssh/sshd_config.d/berth.conf',
      reloadSsh: ['/usr/bin/pkill', '-HUP', '--pidfile', '/run/sshd.pid'],
    },
  };
}

type Table = Record<string, unknown>;

function text(file: Table, key: string, where: string): string | undefined {
  const value = file[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ConfigError(`${where}: ${key} must be a string`);
  return value;
}

function list(file: Table, key: string, where: string): string[] | undefined {
  const value = file[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) {
    throw new ConfigError(`${where}: ${key} must be a list of strings`);
  }
  return value as string[];
}

function whole(file: Table, key: string, where: string): number | undefined {
  const value = file[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' && typeof value !== 'bigint')
    throw new ConfigError(`${where}: ${key} must be a number`);
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${where}: ${key} must be a whole number above 0`);
  return n;
}

function fraction(file: Table, key: string, where: string): number | undefined {
  const value = file[key];
  if (value === undefined) return undefined;
  const n = Number(value);
  if ((typeof value !== 'number' && typeof value !== 'bigint') || !(n >= 0 && n <= 1))
    throw new ConfigError(`${where}: ${key} must be a number from 0 to 1`);
  return n;
}

function fromFile(path: string): ConfigOverrides {
  if (!existsSync(path)) return {};
  let file: Table;
  try {
    file = parseToml(readFileSync(path, 'utf8')) as Table;
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const pool = (file.ip_pool ?? {}) as Table;
  const linux = (file.linux ?? {}) as Table;
  const limits = (file.limits ?? {}) as Table;
  const hooks = file.webhooks ?? [];
  if (!Array.isArray(hooks)) throw new ConfigError(`${path}: webhooks must be [[webhooks]] tables`);
  const webhooks = hooks.map((hook, i) => {
    const where = `${path} [[webhooks]] #${i + 1}`;
    const url = text(hook as Table, 'url', where);
    const secret = text(hook as Table, 'secret', where);
    if (!url || !/^https?:\/\//.test(url)) throw new ConfigError(`${where}: url must be an http(s) URL`);
    if (!secret || secret.length < 16)
      throw new ConfigError(`${where}: secret must be at least 16 characters`);
    return { url, secret, events: list(hook as Table, 'events', where) ?? [] };
  });
  const where = `${path} [linux]`;
  const acme = (file.acme ?? {}) as Table;
  const lockout = (file.lockout ?? {}) as Table;
  const tls = (file.tls ?? {}) as Table;
  const out: ConfigOverrides = {
    hostName: text(file, 'host_name', path),
    sharedIpv4: text(file, 'shared_ipv4', path),
    sharedIpv6: text(file, 'shared_ipv6', path),
    nameservers: list(file, 'nameservers', path),
    homeBase: text(file, 'home_base', path),
    shell: text(file, 'shell', path),
    trustedProxies: list(file, 'trusted_proxies', path),
    tlsCert: text(tls, 'cert', `${path} [tls]`),
    tlsKey: text(tls, 'key', `${path} [tls]`),
    ipPool: {
      ipv4: list(pool, 'ipv4', `${path} [ip_pool]`),
      ipv6: list(pool, 'ipv6', `${path} [ip_pool]`),
      resellerShare: fraction(pool, 'reseller_share', `${path} [ip_pool]`),
    },
    webhooks: hooks.length > 0 ? webhooks : undefined,
    limits: {
      headerTimeout: whole(limits, 'header_timeout', `${path} [limits]`),
      requestTimeout: whole(limits, 'request_timeout', `${path} [limits]`),
      keepAliveTimeout: whole(limits, 'keep_alive_timeout', `${path} [limits]`),
      maxConnections: whole(limits, 'max_connections', `${path} [limits]`),
      maxConnectionsPerAddress: whole(limits, 'max_connections_per_address', `${path} [limits]`),
    },
    linux: {
      systemRoot: text(linux, 'system_root', where),
      components: list(linux, 'components', where) as LinuxComponentName[] | undefined,
      nginxDir: text(linux, 'nginx_dir', where),
      nginxHttpSettings: text(linux, 'nginx_http_settings', where),
      zoneDir: text(linux, 'zone_dir', where),
      dkimDir: text(linux, 'dkim_dir', where),
      logDir: text(linux, 'log_dir', where),
      httpPort: whole(linux, 'http_port', where),
      httpsPort: whole(linux, 'https_port', where),
      webUser: text(linux, 'web_user', where),
      nginxPidFile: text(linux, 'nginx_pid_file', where),
      zoneList: text(linux, 'zone_list', where),
      phpPoolDir: text(linux, 'php_pool_dir', where),
      phpSocketDir: text(linux, 'php_socket_dir', where),
      certDir: text(linux, 'cert_dir', where),
      acmeChallengeDir: text(linux, 'acme_challenge_dir', where),
      quotaFilesystem: text(linux, 'quota_filesystem', where),
      testWeb: list(linux, 'test_web', where),
      reloadWeb: list(linux, 'reload_web', where),
      reloadDns: list(linux, 'reload_dns', where),
      reloadPhp: list(linux, 'reload_php', where),
      checkZone: list(linux, 'check_zone', where),
      mailDir: text(linux, 'mail_dir', where),
      postfixMapDir: text(linux, 'postfix_map_dir', where),
      dovecotMapDir: text(linux, 'dovecot_map_dir', where),
      opendkimMapDir: text(linux, 'opendkim_map_dir', where),
      mailAddress: text(linux, 'mail_address', where),
      imapPort: whole(linux, 'imap_port', where),
      submissionPort: whole(linux, 'submission_port', where),
      dkimPort: whole(linux, 'dkim_port', where),
      reloadMail: list(linux, 'reload_mail', where),
      postfixPidFile: text(linux, 'postfix_pid_file', where),
      reloadImap: list(linux, 'reload_imap', where),
      reloadDkim: list(linux, 'reload_dkim', where),
      jailTemplate: text(linux, 'jail_template', where),
      sshdConfig: text(linux, 'sshd_config', where),
      reloadSsh: list(linux, 'reload_ssh', where),
    },
    acme: {
      directory: text(acme, 'directory', `${path} [acme]`),
      email: text(acme, 'email', `${path} [acme]`),
      checkSeconds: whole(acme, 'check_seconds', `${path} [acme]`),
    },
    lockout: {
      maxFailures: whole(lockout, 'max_failures', `${path} [lockout]`),
      windowMinutes: whole(lockout, 'window_minutes', `${path} [lockout]`),
      lockMinutes: whole(lockout, 'lock_minutes', `${path} [lockout]`),
    },
  };
  if (file.demo !== undefined) out.demo = file.demo === true;
  return out;
}

function switchEnv(name: string): boolean | undefined {
  const value = process.env[name]?.toLowerCase();
  if (value === undefined || value === '') return undefined;
  if (['on', '1', 'yes', 'true'].includes(value)) return true;
  if (['off', '0', 'no', 'false'].includes(value)) return false;
  throw new ConfigError(`${name} must be on or off`);
}

function portEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  return parsePort(value, name);
}

export function parsePort(value: string, name: string): number {
  const port = Number(value);
  if (!/^[0-9]+$/.test(value) || port > 65535)
    throw new ConfigError(`${name} must be a port number (0-65535)`);
  return port;
}

function fromEnvironment(): ConfigOverrides {
  const driver = process.env.BERTH_DRIVER;
  if (driver !== undefined && driver !== 'record' && driver !== 'linux') {
    throw new ConfigError('BERTH_DRIVER must be record or linux');
  }
  return {
    database: process.env.BERTH_DATABASE_URL || undefined,
    host: process.env.BERTH_HOST || undefined,
    port: portEnv('BERTH_PORT'),
    resellerPort: portEnv('BERTH_RESELLER_PORT'),
    tls: switchEnv('BERTH_TLS'),
    demo: switchEnv('BERTH_DEMO'),
    driver: driver || undefined,
  };
}

const SECTIONS = ['lockout', 'ipPool', 'linux', 'acme', 'limits'] as const;

/** `over` laid over `base`: a value left undefined keeps the one below; sections merge key by key. */
function merge(base: Config, over: ConfigOverrides): Config {
  const out = { ...base } as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(over)) {
    if (value !== undefined && !(SECTIONS as readonly string[]).includes(key)) out[key] = value;
  }
  for (const section of SECTIONS) {
    const merged: Record<string, unknown> = { ...base[section] };
    for (const [key, value] of Object.entries(over[section] ?? {}))
      if (value !== undefined) merged[key] = value;
    out[section] = merged;
  }
  return out as unknown as Config;
}

function check(config: Config): Config {
  const fail = (what: string) => {
    throw new ConfigError(what);
  };
  try {
    config.trustedProxies = config.trustedProxies.map((range) => parseAddressRange('trusted_proxies', range));
    config.ipPool.ipv4 = config.ipPool.ipv4.map((ip) => parseAddressRange('ip_pool.ipv4', ip));
    config.ipPool.ipv6 = config.ipPool.ipv6.map((ip) => parseAddressRange('ip_pool.ipv6', ip));
  } catch (error) {
    fail((error as Error).message);
  }
  if (config.ipPool.ipv4.some((ip) => ip.includes('/') || ip.includes(':')))
    fail('ip_pool.ipv4 lists IPv4 addresses');
  if (config.ipPool.ipv6.some((ip) => ip.includes('/') || !ip.includes(':')))
    fail('ip_pool.ipv6 lists IPv6 addresses');
  if (!config.homeBase.startsWith('/')) fail('home_base must be an absolute path');
  if (!config.shell.startsWith('/')) fail('shell must be an absolute path');
  const { linux } = config;
  for (const [name, path] of [
    ['system_root', linux.systemRoot],
    ['nginx_dir', linux.nginxDir],
    ['zone_dir', linux.zoneDir],
    ['dkim_dir', linux.dkimDir],
    ['log_dir', linux.logDir],
    ['nginx_pid_file', linux.nginxPidFile],
    ['zone_list', linux.zoneList],
    ['php_pool_dir', linux.phpPoolDir],
    ['php_socket_dir', linux.phpSocketDir],
    ['cert_dir', linux.certDir],
    ['acme_challenge_dir', linux.acmeChallengeDir],
    ['mail_dir', linux.mailDir],
    ['postfix_map_dir', linux.postfixMapDir],
    ['dovecot_map_dir', linux.dovecotMapDir],
    ['opendkim_map_dir', linux.opendkimMapDir],
    ['jail_template', linux.jailTemplate],
    ['sshd_config', linux.sshdConfig],
    ['postfix_pid_file', linux.postfixPidFile],
  ] as const) {
    if (!path.startsWith('/')) fail(`${name} must be an absolute path`);
  }
  for (const [name, argv] of [
    ['test_web', linux.testWeb],
    ['reload_web', linux.reloadWeb],
    ['reload_dns', linux.reloadDns],
    ['reload_php', linux.reloadPhp],
    ['check_zone', linux.checkZone],
    ['reload_mail', linux.reloadMail],
    ['reload_imap', linux.reloadImap],
    ['reload_dkim', linux.reloadDkim],
    ['reload_ssh', linux.reloadSsh],
  ] as const) {
    if (argv.length > 0 && !argv[0]!.startsWith('/')) fail(`${name} must start with an absolute path`);
  }
  if (linux.httpPort > 65535) fail('http_port must be a port number');
  if (linux.httpsPort > 65535) fail('https_port must be a port number');
  for (const [name, port] of [
    ['imap_port', linux.imapPort],
    ['submission_port', linux.submissionPort],
    ['dkim_port', linux.dkimPort],
  ] as const)
    if (port > 65535) fail(`${name} must be a port number`);
  if (!/^(\*|[0-9.]+|[0-9a-f:]+)$/i.test(linux.mailAddress)) fail('mail_address must be * or an IP address');
  for (const name of linux.components)
    if (!(LINUX_COMPONENTS as readonly string[]).includes(name))
      fail(`components: ${name} is not one of ${LINUX_COMPONENTS.join(', ')}`);
  if (!linux.components.includes('user')) fail('components: user cannot be left out');
  if (!/^[a-z_][a-z0-9_-]*$/.test(linux.webUser)) fail('web_user must be a user name');
  if (!/^https:\/\//.test(config.acme.directory)) fail('acme.directory must be an https URL');
  if (linux.quotaFilesystem === '') linux.quotaFilesystem = null;
  // Without a configured list, the name servers follow the host name, however it was set.
  if (config.nameservers.length === 0)
    config.nameservers = [`ns1.${config.hostName}`, `ns2.${config.hostName}`];
  if ((config.tlsCert === null) !== (config.tlsKey === null)) fail('tls.cert and tls.key go together');
  if (config.database !== null && !/^postgres(ql)?:\/\//.test(config.database)) {
    fail('the database must be a postgres:// URL');
  }
  return config;
}

export function loadConfig(overrides: ConfigOverrides = {}): Config {
  const dataDir = resolve(overrides.dataDir ?? defaultDataDir());
  const base = defaults(dataDir);
  const withFile = merge(base, fromFile(join(dataDir, 'berth.toml')));
  return check(merge(merge(withFile, fromEnvironment()), overrides));
}
