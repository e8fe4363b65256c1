// What the server's configuration holds (Config and its sections but [linux], which is linux.ts) and
// its defaults, before berth.toml, the environment and the flags are laid over them.
import { hostname, networkInterfaces } from 'node:os';
import { join, resolve } from 'node:path';
import { DEFAULT_RESERVED_DOMAINS, PUBLIC_SUFFIX_LIST } from '../core/domain-claims.ts';
import { type LinuxConfig, linuxDefaults } from './linux.ts';

export interface Config {
  dataDir: string;
  /** A PostgreSQL URL shared by several servers, or null for <dataDir>/berth.db. */
  database: string | null;
  host: string;
  port: number;
  resellerPort: number;
  /** The customer listener: the account holders' panel and API (CONTRACT §14). */
  customerPort: number;
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
  /**
   * Domains no account may have, nor any name under them (createacct, add_domain): the providers'
   * that many people's mail goes to.
   */
  reservedDomains: string[];
  /** The Public Suffix List: a public suffix (co.uk, github.io) is no account's domain. */
  publicSuffixList: string;
  homeBase: string;
  shell: string;
  /** How many cron jobs an account may have (add_cron_job); the same for every account. */
  cronJobs: number;
  /** How many connections one database user may have open at once (MAX_USER_CONNECTIONS). */
  databaseUserConnections: number;
  /**
   * How many database users an account may have (add_database_user): with databaseUserConnections,
   * what bounds the connections one account can hold open.
   */
  databaseUsers: number;
  /** Backups of every account (CONTRACT §15; docs/backups.md). */
  backup: BackupConfig;
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

/** Where and when accounts are backed up, and how long their snapshots are kept. */
export interface BackupConfig {
  /** A restic repository: a directory, or any location restic takes (`sftp:`, `s3:`, `rest:`). */
  repository: string;
  /** Five cron fields, server time. */
  schedule: string;
  /** restic's retention: how many of each period's last snapshot are kept, e.g. daily 7, weekly 4. */
  keep: Record<string, number>;
  /** Days a removed account's snapshots are kept after its last one. */
  keepRemovedDays: number;
  /**
   * A file of root's (mode 0600) of KEY=VALUE lines handed to restic in its environment: the
   * credentials of an s3:, rest:, sftp:… repository (config/backup-environment.ts); null: none.
   */
  environmentFile: string | null;
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
  /**
   * Orders one account's domains may place in an hour: the server's one ACME account has a limit
   * of its own (Let's Encrypt: 300 new orders in 3 hours), which one account's domain churn must
   * not use up for every other.
   */
  ordersPerAccountHour: number;
}

/** What a caller (the CLI's flags, a test) may set over the file and the environment. */
export type ConfigOverrides = Partial<
  Omit<Config, 'lockout' | 'ipPool' | 'linux' | 'acme' | 'limits' | 'backup'>
> & {
  backup?: Partial<BackupConfig>;
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

/** Every setting as it is before berth.toml, the environment and the flags. */
export function defaults(dataDir: string): Config {
  const host = hostname().toLowerCase();
  return {
    dataDir,
    database: null,
    host: '0.0.0.0',
    port: 5555,
    resellerPort: 4444,
    customerPort: 2083,
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
    reservedDomains: [...DEFAULT_RESERVED_DOMAINS],
    publicSuffixList: PUBLIC_SUFFIX_LIST,
    homeBase: '/home',
    shell: '/bin/bash',
    cronJobs: 20,
    // 50 connections an account at most: a third of Debian's max_connections (151).
    databaseUserConnections: 10,
    databaseUsers: 5,
    backup: {
      repository: join(dataDir, 'backups'),
      schedule: '0 3 * * *',
      keep: { daily: 7, weekly: 4 },
      keepRemovedDays: 30,
      environmentFile: null,
    },
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
      ordersPerAccountHour: 10,
    },
    linux: linuxDefaults(),
  };
}
