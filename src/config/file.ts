// berth.toml: every key it may hold, how it is read into overrides of the defaults (a key or value
// it cannot use stops Berth with the file, the key and the reason), and the template berth init writes.
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseToml } from 'smol-toml';
import { LINUX_KEYS } from './linux.ts';
import {
  absolutePath,
  addressOrNone,
  addressRange,
  cronScheduleValue,
  fraction,
  hostNameValue,
  listenAddress,
  listOf,
  nodeNameValue,
  oneOf,
  onOff,
  port,
  positive,
  type Reader,
  Refused,
  retentionValue,
  stringList,
  textValue,
  urlValue,
  wholeNumber,
} from './readers.ts';
import { type Config, ConfigError, type ConfigOverrides, type Webhook } from './settings.ts';

type Table = Record<string, unknown>;

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
  customer_port: ['customerPort', port],
  demo: ['demo', onOff],
  node_name: ['nodeName', nodeNameValue],
  node_weight: ['nodeWeight', wholeNumber(1, 1000)],
  advertise_url: ['advertiseUrl', urlValue],
  host_name: ['hostName', hostNameValue],
  shared_ipv4: ['sharedIpv4', addressOrNone(4)],
  shared_ipv6: ['sharedIpv6', addressOrNone(6)],
  nameservers: ['nameservers', listOf(hostNameValue)],
  reserved_domains: ['reservedDomains', listOf(hostNameValue)],
  public_suffix_list: ['publicSuffixList', absolutePath],
  home_base: ['homeBase', absolutePath],
  uid_min: ['uids.min', wholeNumber(1000, 4_294_967_294)],
  uid_max: ['uids.max', wholeNumber(1000, 4_294_967_294)],
  shell: ['shell', absolutePath],
  cron_jobs: ['cronJobs', wholeNumber(0, 10_000)],
  database_user_connections: ['databaseUserConnections', wholeNumber(1, 10_000)],
  database_users: ['databaseUsers', wholeNumber(0, 10_000)],
  backup_repository: [
    'backup.repository',
    textValue({
      pattern: /^(\/|[a-z][a-z0-9]*:)/,
      what: 'a directory or a restic location (sftp:, s3:, rest:…)',
    }),
  ],
  backup_schedule: ['backup.schedule', cronScheduleValue],
  backup_keep: ['backup.keep', retentionValue],
  backup_keep_removed: ['backup.keepRemovedDays', wholeNumber(0, 36_500)],
  backup_environment_file: ['backup.environmentFile', absolutePath],
  trusted_proxies: ['trustedProxies', listOf(addressRange())],
  trusted_addresses: ['trustedAddresses', listOf(addressRange())],
  'tls.enabled': ['tls', onOff],
  'tls.cert': ['tlsCert', absolutePath],
  'tls.key': ['tlsKey', absolutePath],
  'ip_pool.ipv4': ['ipPool.ipv4', listOf(addressRange(4))],
  'ip_pool.ipv6': ['ipPool.ipv6', listOf(addressRange(6))],
  'ip_pool.reseller_share': ['ipPool.resellerShare', fraction],
  ...LINUX_KEYS,
  'acme.directory': ['acme.directory', textValue({ pattern: /^https:\/\//, what: 'an https URL' })],
  'acme.email': ['acme.email', textValue()],
  'acme.check_seconds': ['acme.checkSeconds', positive],
  'acme.orders_per_account_hour': ['acme.ordersPerAccountHour', positive],
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
    const example =
      key in TEMPLATE_EXAMPLES ? TEMPLATE_EXAMPLES[key] : (TEMPLATE_FORMS[key]?.(value) ?? value);
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
/** Settings written in another form than the one Berth keeps them in. */
const TEMPLATE_FORMS: Record<string, (value: unknown) => string> = {
  'linux.ftp_passive_ports': (value) => (value as [number, number]).join(':'),
};

const TEMPLATE_EXAMPLES: Record<string, unknown> = {
  nameservers: [],
  database: 'postgres://berth@db.example.net/berth',
  advertise_url: 'https://b.example.net:5555',
  'tls.cert': '/etc/ssl/berth/fullchain.pem',
  'tls.key': '/etc/ssl/berth/privkey.pem',
  'linux.quota_filesystem': '/home',
  backup_repository: '/var/lib/berth/backups',
  backup_keep: '7 daily, 4 weekly',
  backup_environment_file: '/etc/berth/backup.env',
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

const DOVECOT_NOT_RELOADED =
  'is no longer used: Dovecot reads its logins from a database and is never reloaded; remove it';

/** Keys an earlier Berth knew and this one has no use for: what to do about each. */
const RETIRED: Record<string, string> = {
  'linux.reload_imap': DOVECOT_NOT_RELOADED,
  'linux.dovecot_pid_file': DOVECOT_NOT_RELOADED,
};

/** berth.toml as overrides: every key known, every value usable, or a ConfigError naming both. */
export function fromFile(path: string): ConfigOverrides {
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
    if (!setting && RETIRED[key]) throw new ConfigError(`${path}: ${key} ${RETIRED[key]}`);
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
