// The server's configuration: defaults, then <data-dir>/berth.toml, then environment variables,
// then command-line flags (each later source wins). Documented in docs/configuration.md.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { isIP } from 'node:net';
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
  /** This server's name in its fleet (CONTRACT §12); default the machine's host name. */
  nodeName: string;
  /** This server's share of new accounts against the fleet's others (placement, CONTRACT §12). */
  nodeWeight: number;
  /** Where the fleet's other servers reach this one; null: its admin listener at host_name. */
  advertiseUrl: string | null;
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
  /**
   * The uids (and gids) accounts get, one each, never given twice across the fleet: above the
   * system's own users and people (Debian gives those 1000 up), below what Debian reserves
   * (60000 up) and the subordinate ids of user namespaces (100000 up).
   */
  uids: { min: number; max: number };
  trustedProxies: string[];
  /** Addresses and ranges never locked out: their failures are not counted, their calls never refused. */
  trustedAddresses: string[];
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
export const QUOTA_SETTINGS = ['auto', 'linux', 'btrfs', 'none'] as const;
export type QuotaSetting = (typeof QUOTA_SETTINGS)[number];

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
  /** `<domain>/access.log` and `error.log` per site, readable by root and the account's group only. */
  logDir: string;
  /** Berth's logrotate file for the sites' logs; empty when the administrator rotates them. */
  logrotateConfig: string;
  httpPort: number;
  httpsPort: number;
  /** The user nginx's workers run as: the only one that may use the PHP pools' sockets. */
  webUser: string;
  /** The pid file of nginx's master, watched so that a reload is waited for. */
  nginxPidFile: string;
  /**
   * The error log of nginx's master, where it says why it refused a reload; empty to run
   * `testWeb` before every reload instead.
   */
  nginxErrorLog: string;
  /** The file of zone statements BIND includes, rewritten whole from the zone directory. */
  zoneList: string;
  /** Each account's PHP-FPM master configuration (its pool), `<user>.conf`. */
  phpPoolDir: string;
  /** The sockets and pid files of the accounts' PHP-FPM masters. */
  phpSocketDir: string;
  /** The accounts' PHP-FPM masters' own logs (root's alone). */
  phpLogDir: string;
  /** Debian's PHP-FPM binary, one master per account. */
  phpFpm: string;
  /** The name of the control group under each cgroup hierarchy that holds the accounts' groups. */
  cgroupParent: string;
  /** The processes (and threads) an account may run at once; null for no bound. */
  accountProcesses: number | null;
  /** The memory (MB) an account's processes may use, page cache and tmpfs included; null for none. */
  accountMemory: number | null;
  /** Certificates and their state, one directory per domain. */
  certDir: string;
  /** Where nginx serves /.well-known/acme-challenge/ from, for every domain. */
  acmeChallengeDir: string;
  /**
   * How disk quotas are enforced: Linux user quotas (`setquota`), btrfs qgroups (a subvolume per
   * home), none, or `auto`: btrfs when the home base is on btrfs, else Linux quotas when
   * quotaFilesystem is set, else none.
   */
  quota: QuotaSetting;
  /** The filesystem setquota sets quotas on (Linux user quotas), or null. */
  quotaFilesystem: string | null;
  /** Files (inodes) a Linux user quota allows per MB of disk quota. */
  quotaInodesPerMb: number;
  /** Commands as argument arrays, run only when systemRoot is `/`. */
  testWeb: string[];
  reloadWeb: string[];
  reloadDns: string[];
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
  /** sshd's PAM configuration, where Berth adds its session hook (control groups, the jail's /proc). */
  pamSshd: string;
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

/** A reload by a signal to the master named in a pid file. */
function signalThroughPidFile(signal: string, pidFile: string): string[] {
  return ['/usr/bin/pkill', signal, '--pidfile', pidFile];
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
    nodeName:
      host
        .split('.')[0]!
        .replace(/[^a-z0-9-]/g, '-')
        .slice(0, 63) || 'berth',
    nodeWeight: 1,
    advertiseUrl: null,
    hostName: host,
    sharedIpv4: firstAddress('IPv4'),
    sharedIpv6: firstAddress('IPv6'),
    ipPool: { ipv4: [], ipv6: [], resellerShare: 0.5 },
    nameservers: [],
    homeBase: '/home',
    shell: '/bin/bash',
    uids: { min: 10000, max: 59999 },
    trustedProxies: [],
    trustedAddresses: [],
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
      logrotateConfig: '/etc/logrotate.d/berth-sites',
      httpPort: 80,
      httpsPort: 443,
      webUser: 'www-data',
      nginxPidFile: '/run/nginx.pid',
      nginxErrorLog: '/var/log/nginx/error.log',
      zoneList: '/etc/bind/named.conf.berth',
      phpPoolDir: '/etc/berth/php-fpm',
      phpSocketDir: '/run/berth/php',
      phpLogDir: '/var/log/berth/php-fpm',
      phpFpm: `/usr/sbin/php-fpm${php}`,
      cgroupParent: 'berth',
      accountProcesses: 256,
      accountMemory: 2048,
      certDir: '/etc/berth/certs',
      acmeChallengeDir: '/var/www/berth-acme',
      quota: 'auto',
      quotaFilesystem: null,
      quotaInodesPerMb: 100,
      testWeb: ['/usr/sbin/nginx', '-t', '-q'],
      // SIGHUP to the master: `nginx -s reload` parses the whole configuration (every site's
      // certificate) only to find the pid file, a second full parse on every reload.
      reloadWeb: signalThroughPidFile('-HUP', '/run/nginx.pid'),
      reloadDns: ['/usr/sbin/rndc', 'reload'],
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
      pamSshd: '/etc/pam.d/sshd',
      reloadSsh: ['/usr/bin/pkill', '-HUP', '--pidfile', '/run/sshd.pid'],
    },
  };
}

type Table = Record<string, unknown>;

/** Why a value in berth.toml cannot be used (the loader adds the file and the key). */
class Refused extends Error {}

/** Reads one value of berth.toml into what Config holds, or throws Refused with the reason. */
type Reader = (value: unknown) => unknown;

const textValue =
  (rule?: { pattern: RegExp; what: string }): Reader =>
  (value) => {
    if (typeof value !== 'string') throw new Refused('must be a string');
    if (rule && !rule.pattern.test(value)) throw new Refused(`must be ${rule.what}`);
    return value;
  };

/** A server's name in its fleet: a host-name label. */
export const NODE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const nodeNameValue = textValue({ pattern: NODE_NAME, what: 'a name of lower-case letters, digits and -' });
const urlValue = textValue({
  pattern: /^https?:\/\/[^\s/]+\/?$/,
  what: 'an https:// address without a path',
});

const absolutePath = textValue({ pattern: /^\//, what: 'an absolute path' });
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const hostNameValue = (value: unknown) => {
  const name = (textValue()(value) as string).toLowerCase();
  if (!HOST_NAME.test(name)) throw new Refused(`must be a host name, not "${name}"`);
  return name;
};

function listOf(item: Reader): Reader {
  return (value) => {
    if (!Array.isArray(value)) throw new Refused('must be a list');
    return value.map((each, i) => {
      try {
        return item(each);
      } catch (error) {
        if (error instanceof Refused) throw new Refused(`item ${i + 1} ${error.message}`);
        throw error;
      }
    });
  };
}

const stringList = listOf(textValue());

/** A command as an argument array starting with an absolute path; empty: none. */
const command: Reader = (value) => {
  const argv = stringList(value) as string[];
  if (argv.length > 0 && !argv[0]!.startsWith('/')) throw new Refused('must start with an absolute path');
  return argv;
};

const wholeNumber =
  (min: number, max: number = Number.MAX_SAFE_INTEGER): Reader =>
  (value) => {
    const n = typeof value === 'bigint' ? Number(value) : value;
    if (typeof n !== 'number' || !Number.isInteger(n)) throw new Refused('must be a whole number');
    if (n < min || n > max) throw new Refused(`must be from ${min} to ${max}`);
    return n;
  };

/** A bound, or `"unlimited"` (null: none). */
const unlimitedOr =
  (bound: Reader): Reader =>
  (value) =>
    value === 'unlimited' ? null : bound(value);

const port = wholeNumber(0, 65535);
const servicePort = wholeNumber(1, 65535);
const positive = wholeNumber(1);

const fraction: Reader = (value) => {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1))
    throw new Refused('must be a number from 0 to 1');
  return value;
};

const onOff: Reader = (value) => {
  if (typeof value !== 'boolean') throw new Refused('must be true or false');
  return value;
};

const oneOf =
  (...choices: string[]): Reader =>
  (value) => {
    if (typeof value !== 'string' || !choices.includes(value))
      throw new Refused(`must be one of ${choices.map((c) => `"${c}"`).join(', ')}`);
    return value;
  };

function addressRange(family?: 4 | 6): Reader {
  return (value) => {
    const raw = textValue()(value) as string;
    let address: string;
    try {
      address = parseAddressRange('address', raw);
    } catch {
      throw new Refused(`must be an IPv4 or IPv6 address or CIDR range, not "${raw}"`);
    }
    if (family === undefined) return address;
    if (address.includes('/') || isIP(address) !== family)
      throw new Refused(`must be an IPv${family} address, not "${raw}"`);
    return address;
  };
}

/** One IP address (no range) to listen on. */
const listenAddress: Reader = (value) => {
  const address = addressRange()(value) as string;
  if (address.includes('/')) throw new Refused(`must be an IP address, not the range "${address}"`);
  return address;
};

const addressOrNone = (family: 4 | 6): Reader => {
  const read = addressRange(family);
  return (value) => (value === '' ? '' : read(value));
};

const components: Reader = (value) => {
  const names = listOf(oneOf(...LINUX_COMPONENTS))(value) as string[];
  if (!names.includes('user')) throw new Refused('must include "user", which cannot be left out');
  return names;
};

/**
 * Every key of berth.toml: its place (`key` or `section.key`), the Config field it sets (`field` or
 * `section.field`) and how its value is read. `berth.toml` may hold these and nothing else.
 */
const SETTINGS: Record<string, [field: string, read: Reader]> = {
  database: ['database', textValue({ pattern: /^postgres(ql)?:\/\//, what: 'a postgres:// URL' })],
  driver: ['driver', oneOf('record', 'linux')],
  host: ['host', listenAddress],
  port: ['port', port],
  reseller_port: ['resellerPort', port],
  demo: ['demo', onOff],
  node_name: ['nodeName', nodeNameValue],
  node_weight: ['nodeWeight', wholeNumber(1, 1000)],
  advertise_url: ['advertiseUrl', urlValue],
  host_name: ['hostName', hostNameValue],
  shared_ipv4: ['sharedIpv4', addressOrNone(4)],
  shared_ipv6: ['sharedIpv6', addressOrNone(6)],
  nameservers: ['nameservers', listOf(hostNameValue)],
  home_base: ['homeBase', absolutePath],
  uid_min: ['uids.min', wholeNumber(1000, 4_294_967_294)],
  uid_max: ['uids.max', wholeNumber(1000, 4_294_967_294)],
  shell: ['shell', absolutePath],
  trusted_proxies: ['trustedProxies', listOf(addressRange())],
  trusted_addresses: ['trustedAddresses', listOf(addressRange())],
  'tls.enabled': ['tls', onOff],
  'tls.cert': ['tlsCert', absolutePath],
  'tls.key': ['tlsKey', absolutePath],
  'ip_pool.ipv4': ['ipPool.ipv4', listOf(addressRange(4))],
  'ip_pool.ipv6': ['ipPool.ipv6', listOf(addressRange(6))],
  'ip_pool.reseller_share': ['ipPool.resellerShare', fraction],
  'linux.system_root': ['linux.systemRoot', absolutePath],
  'linux.components': ['linux.components', components],
  'linux.nginx_dir': ['linux.nginxDir', absolutePath],
  'linux.nginx_http_settings': ['linux.nginxHttpSettings', (v) => (v === '' ? '' : absolutePath(v))],
  'linux.zone_dir': ['linux.zoneDir', absolutePath],
  'linux.dkim_dir': ['linux.dkimDir', absolutePath],
  'linux.log_dir': ['linux.logDir', absolutePath],
  'linux.logrotate_config': ['linux.logrotateConfig', (v) => (v === '' ? '' : absolutePath(v))],
  'linux.http_port': ['linux.httpPort', servicePort],
  'linux.https_port': ['linux.httpsPort', servicePort],
  'linux.web_user': ['linux.webUser', textValue({ pattern: /^[a-z_][a-z0-9_-]*$/, what: 'a user name' })],
  'linux.nginx_pid_file': ['linux.nginxPidFile', absolutePath],
  'linux.nginx_error_log': ['linux.nginxErrorLog', (v) => (v === '' ? '' : absolutePath(v))],
  'linux.zone_list': ['linux.zoneList', absolutePath],
  'linux.php_pool_dir': ['linux.phpPoolDir', absolutePath],
  'linux.php_socket_dir': ['linux.phpSocketDir', absolutePath],
  'linux.php_log_dir': ['linux.phpLogDir', absolutePath],
  'linux.php_fpm': ['linux.phpFpm', absolutePath],
  'linux.cgroup_parent': [
    'linux.cgroupParent',
    textValue({ pattern: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, what: 'a control group name' }),
  ],
  'linux.account_processes': ['linux.accountProcesses', unlimitedOr(wholeNumber(16, 1_000_000))],
  'linux.account_memory': ['linux.accountMemory', unlimitedOr(wholeNumber(64, 1_048_576))],
  'linux.cert_dir': ['linux.certDir', absolutePath],
  'linux.acme_challenge_dir': ['linux.acmeChallengeDir', absolutePath],
  'linux.quota': ['linux.quota', oneOf(...QUOTA_SETTINGS)],
  'linux.quota_filesystem': ['linux.quotaFilesystem', (v) => (v === '' ? null : absolutePath(v))],
  'linux.quota_inodes_per_mb': ['linux.quotaInodesPerMb', positive],
  'linux.test_web': ['linux.testWeb', command],
  'linux.reload_web': ['linux.reloadWeb', command],
  'linux.reload_dns': ['linux.reloadDns', command],
  'linux.check_zone': ['linux.checkZone', command],
  'linux.mail_dir': ['linux.mailDir', absolutePath],
  'linux.postfix_map_dir': ['linux.postfixMapDir', absolutePath],
  'linux.dovecot_map_dir': ['linux.dovecotMapDir', absolutePath],
  'linux.opendkim_map_dir': ['linux.opendkimMapDir', absolutePath],
  'linux.mail_address': ['linux.mailAddress', (v) => (v === '*' ? '*' : listenAddress(v))],
  'linux.imap_port': ['linux.imapPort', servicePort],
  'linux.submission_port': ['linux.submissionPort', servicePort],
  'linux.dkim_port': ['linux.dkimPort', servicePort],
  'linux.reload_mail': ['linux.reloadMail', command],
  'linux.postfix_pid_file': ['linux.postfixPidFile', absolutePath],
  'linux.reload_imap': ['linux.reloadImap', command],
  'linux.reload_dkim': ['linux.reloadDkim', command],
  'linux.jail_template': ['linux.jailTemplate', absolutePath],
  'linux.sshd_config': ['linux.sshdConfig', absolutePath],
  'linux.pam_sshd': ['linux.pamSshd', absolutePath],
  'linux.reload_ssh': ['linux.reloadSsh', command],
  'acme.directory': ['acme.directory', textValue({ pattern: /^https:\/\//, what: 'an https URL' })],
  'acme.email': ['acme.email', textValue()],
  'acme.check_seconds': ['acme.checkSeconds', positive],
  'limits.header_timeout': ['limits.headerTimeout', positive],
  'limits.request_timeout': ['limits.requestTimeout', positive],
  'limits.keep_alive_timeout': ['limits.keepAliveTimeout', positive],
  'limits.max_connections': ['limits.maxConnections', positive],
  'limits.max_connections_per_address': ['limits.maxConnectionsPerAddress', positive],
  'lockout.max_failures': ['lockout.maxFailures', positive],
  'lockout.window_minutes': ['lockout.windowMinutes', positive],
  'lockout.lock_minutes': ['lockout.lockMinutes', positive],
};

function tomlValue(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/**
 * A berth.toml listing every key with the value `config` has, commented out but for `set`: what
 * `berth init` writes, so that an administrator sees every setting and uncomments what to change.
 */
export function configTemplate(config: Config, set: readonly string[] = []): string {
  const lines = [
    "# Berth's configuration. Every key is described in docs/configuration.md; uncomment what this",
    '# server needs. A key Berth does not know stops it with the file, the key and the reason.',
    '',
  ];
  let section: string | undefined;
  for (const [key, [field]] of Object.entries(SETTINGS)) {
    const [keySection, name] = key.includes('.') ? key.split('.') : [undefined, key];
    if (keySection !== section) {
      lines.push('', `[${keySection}]`);
      section = keySection;
    }
    const [fieldSection, fieldName] = field.includes('.') ? field.split('.') : [undefined, field];
    const value = fieldSection
      ? (config[fieldSection as keyof Config] as Table)[fieldName!]
      : config[fieldName as keyof Config];
    const example = key in TEMPLATE_EXAMPLES ? TEMPLATE_EXAMPLES[key] : value;
    lines.push(`${set.includes(key) ? '' : '# '}${name} = ${tomlValue(example)}`);
  }
  lines.push(
    '',
    '# [[webhooks]]',
    '# url = "https://billing.example.net/berth-events"',
    '# secret = "a-long-random-shared-secret"',
    '# events = ["account.created", "account.removed"]',
    '',
  );
  return lines.join('\n');
}

/** What the template shows for a setting unset by default, or whose default follows another. */
const TEMPLATE_EXAMPLES: Record<string, unknown> = {
  nameservers: [],
  database: 'postgres://berth@db.example.net/berth',
  advertise_url: 'https://b.example.net:5555',
  'tls.cert': '/etc/ssl/berth/fullchain.pem',
  'tls.key': '/etc/ssl/berth/privkey.pem',
  'linux.quota_filesystem': '/home',
};

/** The keys of berth.toml, for the docs and their test. */
export const FILE_KEYS = [...Object.keys(SETTINGS), 'webhooks.url', 'webhooks.secret', 'webhooks.events'];

const SECTION_NAMES = new Set(
  Object.keys(SETTINGS).flatMap((key) => (key.includes('.') ? [key.split('.')[0]!] : [])),
);

function isTable(value: unknown): value is Table {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

function readWebhook(hook: unknown, where: string): Webhook {
  if (!isTable(hook)) throw new ConfigError(`${where}: must be a [[webhooks]] table`);
  for (const key of Object.keys(hook))
    if (!['url', 'secret', 'events'].includes(key)) throw new ConfigError(`${where}: unknown key ${key}`);
  const field = <T>(key: string, read: Reader, fallback?: T): T => {
    if (hook[key] === undefined) {
      if (fallback !== undefined) return fallback;
      throw new ConfigError(`${where}: ${key} is required`);
    }
    try {
      return read(hook[key]) as T;
    } catch (error) {
      if (error instanceof Refused) throw new ConfigError(`${where}: ${key} ${error.message}`);
      throw error;
    }
  };
  return {
    url: field('url', textValue({ pattern: /^https?:\/\/./, what: 'an http(s) URL' })),
    secret: field('secret', textValue({ pattern: /^.{16,}$/s, what: 'at least 16 characters' })),
    events: field('events', stringList, []),
  };
}

/** berth.toml as overrides: every key known, every value usable, or a ConfigError naming both. */
function fromFile(path: string): ConfigOverrides {
  if (!existsSync(path)) return {};
  let file: Table;
  try {
    file = parseToml(readFileSync(path, 'utf8')) as Table;
  } catch (error) {
    throw new ConfigError(`${path}: ${(error as Error).message.split('\n')[0]}`);
  }
  const out: Record<string, unknown> = {};
  const set = (key: string, value: unknown) => {
    const setting = SETTINGS[key];
    if (!setting) throw new ConfigError(`${path}: unknown key ${key}`);
    const [field, read] = setting;
    let parsed: unknown;
    try {
      parsed = read(value);
    } catch (error) {
      if (error instanceof Refused) throw new ConfigError(`${path}: ${key} ${error.message}`);
      throw error;
    }
    const [section, name] = field.includes('.') ? field.split('.') : [undefined, field];
    if (section === undefined) out[name!] = parsed;
    else out[section] = { ...(out[section] as Table | undefined), [name!]: parsed };
  };
  for (const [key, value] of Object.entries(file)) {
    if (key === 'webhooks') {
      if (!Array.isArray(value)) throw new ConfigError(`${path}: webhooks must be [[webhooks]] tables`);
      out.webhooks = value.map((hook, i) => readWebhook(hook, `${path} [[webhooks]] #${i + 1}`));
    } else if (SECTION_NAMES.has(key)) {
      if (!isTable(value)) throw new ConfigError(`${path}: ${key} must be a [${key}] table`);
      for (const [inner, innerValue] of Object.entries(value)) set(`${key}.${inner}`, innerValue);
    } else if (isTable(value)) throw new ConfigError(`${path}: unknown section [${key}]`);
    else set(key, value);
  }
  if ('tlsCert' in out !== 'tlsKey' in out)
    throw new ConfigError(`${path}: tls.cert and tls.key go together: set both or neither`);
  return out as ConfigOverrides;
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

/** An address to listen on, from the environment or a flag (`name` says which). */
export function parseHost(value: string, name: string): string {
  try {
    return listenAddress(value) as string;
  } catch (error) {
    if (error instanceof Refused) throw new ConfigError(`${name} ${error.message}`);
    throw error;
  }
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
    host: process.env.BERTH_HOST ? parseHost(process.env.BERTH_HOST, 'BERTH_HOST') : undefined,
    port: portEnv('BERTH_PORT'),
    resellerPort: portEnv('BERTH_RESELLER_PORT'),
    tls: switchEnv('BERTH_TLS'),
    demo: switchEnv('BERTH_DEMO'),
    driver: driver || undefined,
    nodeName: process.env.BERTH_NODE ? parseNodeName(process.env.BERTH_NODE, 'BERTH_NODE') : undefined,
    advertiseUrl: process.env.BERTH_ADVERTISE_URL
      ? parseAdvertiseUrl(process.env.BERTH_ADVERTISE_URL, 'BERTH_ADVERTISE_URL')
      : undefined,
  };
}

/** A server name given as --node or BERTH_NODE. */
export function parseNodeName(value: string, name: string): string {
  if (!NODE_NAME.test(value))
    throw new ConfigError(`${name} must be a name of lower-case letters, digits and -`);
  return value;
}

/** An address given as --advertise or BERTH_ADVERTISE_URL. */
export function parseAdvertiseUrl(value: string, name: string): string {
  try {
    return urlValue(value) as string;
  } catch {
    throw new ConfigError(
      `${name} must be an https:// address without a path, such as https://b.example.net:5555`,
    );
  }
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

/** The rules between settings, once every source is laid over the defaults. */
function check(config: Config): Config {
  // Without a configured list, the name servers follow the host name, however it was set.
  if (config.nameservers.length === 0)
    config.nameservers = [`ns1.${config.hostName}`, `ns2.${config.hostName}`];
  if (config.database !== null && !/^postgres(ql)?:\/\//.test(config.database)) {
    throw new ConfigError('the database must be a postgres:// URL');
  }
  return config;
}

export function loadConfig(overrides: ConfigOverrides = {}): Config {
  const dataDir = resolve(overrides.dataDir ?? defaultDataDir());
  const base = defaults(dataDir);
  const withFile = merge(base, fromFile(join(dataDir, 'berth.toml')));
  const config = merge(merge(withFile, fromEnvironment()), overrides);
  // A reload left at its default signals the master of the pid file configured, whichever it is.
  const { linux } = config;
  if (linux.reloadWeb === base.linux.reloadWeb)
    linux.reloadWeb = signalThroughPidFile('-HUP', linux.nginxPidFile);
  return check(config);
}
