// The [linux] section of berth.toml: where the linux driver puts things, the commands it runs, the
// components it assembles; their defaults (Debian's) and how each key is read.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  absolutePath,
  command,
  controlAddress,
  dnsServer,
  listenAddress,
  listOf,
  oneOf,
  positive,
  type Reader,
  Refused,
  servicePort,
  textValue,
  unlimitedOr,
  wholeNumber,
} from './readers.ts';

export const LINUX_COMPONENTS = [
  'user',
  'php',
  'tls',
  'web',
  'dns',
  'mail',
  'shell',
  'cron',
  'lists',
  'database',
  'ftp',
  'webmail',
] as const;
export type LinuxComponentName = (typeof LINUX_COMPONENTS)[number];
export const QUOTA_SETTINGS = ['auto', 'linux', 'btrfs', 'none'] as const;
export type QuotaSetting = (typeof QUOTA_SETTINGS)[number];

/** Where the linux driver puts things. Paths are absolute within `systemRoot`. */
export interface LinuxConfig {
  /** Stands for `/`: every file is read and written below it; services are reloaded only at `/`. */
  systemRoot: string;
  /** The parts of the hosting stack this server runs (`user` always). */
  components: LinuxComponentName[];
  /** The directory of server blocks nginx reads: Berth writes `berth-sites.conf` there, every site's. */
  nginxDir: string;
  /** A file nginx reads inside its http block, with Berth's settings for it; empty when the administrator sets them. */
  nginxHttpSettings: string;
  zoneDir: string;
  dkimDir: string;
  /** How many DKIM keys are kept made ahead, in `<dkimDir>/.pool`, for createacct to take (0: none). */
  dkimKeysAhead: number;
  /** `<domain>/access.log` per site, readable by root and the account's group only. */
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
  /**
   * The file of zone statements an older Berth wrote for BIND to include: kept with no zone in it,
   * for a named.conf.local that still includes it (Berth's zones are BIND's added zones now).
   */
  zoneList: string;
  /** Each account's PHP-FPM master configuration (its pool), `<user>.conf`. */
  phpPoolDir: string;
  /** The sockets and pid files of the accounts' PHP-FPM masters. */
  phpSocketDir: string;
  /** The accounts' PHP-FPM masters' own logs (root's alone). */
  phpLogDir: string;
  /** Debian's PHP-FPM binary, one master per account. */
  phpFpm: string;
  /**
   * Seconds an account's master runs with no worker before it ends (it starts again at the next
   * request, php/activator.ts): an idle account costs no process.
   */
  phpIdleStop: number;
  /** MariaDB's socket: Berth talks to it as root (unix_socket), and so do the accounts' PHP and shells. */
  mariadbSocket: string;
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
   * A directory of root's per site (domain), which nginx finds by the request's host name: links
   * to the document root, PHP socket and certificate, and the suspension file. Adding, changing
   * and suspending a site changes files there and reloads nothing.
   */
  sitesDir: string;
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
  /** Reloads every zone BIND has (recovery); a call's change reloads through `rndc` alone. */
  reloadDns: string[];
  /**
   * rndc with the options that reach this server's BIND: a call's change runs `addzone` and
   * `delzone` (a zone added or removed), `reload <zone>` (a zone changed) and `zonestatus <zone>`
   * through it.
   */
  rndc: string[];
  /**
   * BIND's control channel (`address:port`), which Berth speaks itself (no rndc process at each
   * change); empty to run `rndc` instead.
   */
  rndcControl: string;
  /** The key BIND's control channel takes (rndc.key), read at each command. */
  rndcKey: string;
  /**
   * Lists the zones added to BIND (rndc addzone), one `zone` statement each: named-nzd2nzf on
   * BIND's database of them, as BIND's user; empty to skip (Berth then cannot tell BIND's zones).
   */
  bindAddedZones: string[];
  /**
   * Where BIND answers DNS (`address` or `address:port`): a change is served once BIND answers the
   * zone's SOA with its new serial there. Empty: `rndc zonestatus` is asked instead (a process each time).
   */
  bindListen: string;
  /**
   * Prints BIND's whole configuration (named-checkconf -p), in which doctor looks for
   * `allow-new-zones yes`, without which BIND takes none of Berth's zones; empty to skip.
   */
  checkBindConfig: string[];
  /** named-checkzone, run on every zone written; empty to skip. */
  checkZone: string[];
  /** The mail component's record of each local mail domain, from which every mail table is written. */
  mailDir: string;
  /** Where the mailing lists' table for Postfix is (Berth serves Postfix its other tables). */
  postfixMapDir: string;
  /** Dovecot's database of Berth's logins and mail users, read by Dovecot on every lookup. */
  dovecotMapDir: string;
  /** OpenDKIM's key and signing tables. */
  opendkimMapDir: string;
  /** The address IMAP and submission listen on (`*`: every address). */
  mailAddress: string;
  imapPort: number;
  submissionPort: number;
  /**
   * Postfix's queue directory: the milters' sockets are in it (`berth/sender-policy.sock` and
   * `berth/local-mail.sock`, Berth's; `opendkim/opendkim.sock`), where its chrooted daemons find
   * them.
   */
  postfixQueueDir: string;
  /** The DNS server (`address` or `address:port`) SPF is checked with; empty: the system's. */
  mailDnsServer: string;
  /** The MB of mail an account may have waiting in Postfix's queue; null for no bound. */
  mailQueueLimit: number | null;
  /** The messages an account may have waiting in Postfix's queue; null for no bound. */
  mailQueueMessages: number | null;
  /** The MB of mail an account's mailing lists together may have waiting in Postfix's queue; null for no bound. */
  mailQueueListsLimit: number | null;
  /** The messages an account's mailing lists together may have waiting in Postfix's queue; null for no bound. */
  mailQueueListsMessages: number | null;
  /** The mailing lists' directories (mlmmj's), the lists user's alone. */
  listsDir: string;
  /** The port on 127.0.0.1 where Postfix takes the lists' outgoing mail (from the lists user only). */
  listsPort: number;
  /** Reloads Postfix; empty (the default) to send its master SIGHUP from Berth, as `postfix reload` does. */
  reloadMail: string[];
  /** The pid file of Postfix's master, signalled and watched so that a reload is waited for. */
  postfixPidFile: string;
  /** Reload OpenDKIM; empty (the default): Berth signals the process its pid file names. */
  reloadDkim: string[];
  opendkimPidFile: string;
  /** The jail template (made with jailkit) every shell account's jail is hard-linked from. */
  jailTemplate: string;
  /** The file sshd includes with Berth's chroot rules. */
  sshdConfig: string;
  /** sshd's PAM configuration, where Berth adds its session hook (control groups, the jail's /proc). */
  pamSshd: string;
  reloadSsh: string[];
  /** Pure-FTPd's configuration, written by Berth when it starts (pure-ftpd is run with it). */
  ftpConfig: string;
  /** The FTP accounts' lines, `<user>` each (root's alone), joined into ftpUsers. */
  ftpUserDir: string;
  /** Where each FTP account's directory is pinned (bind-mounted) for its chroot, `<user>/<login>`. */
  ftpRootDir: string;
  /** Pure-FTPd's virtual users (pure-pw's passwd format), compiled into ftpDatabase. */
  ftpUsers: string;
  /** The PureDB file Pure-FTPd reads at every login. */
  ftpDatabase: string;
  /** The address FTP listens on (`*`: every address). */
  ftpAddress: string;
  ftpPort: number;
  /** The passive data ports, first and last. */
  ftpPassivePorts: [number, number];
  /** Pure-FTPd's PAM configuration, where Berth lets accounts' own logins in (and no one else). */
  pamFtp: string;
  /** The port webmail (Roundcube) is served on over HTTPS, on the shared addresses, for every domain. */
  webmailPort: number;
  /** The system user webmail's PHP runs as: no account's, never root. */
  webmailUser: string;
  /** Roundcube's configuration as Berth writes it, its DES key and its PHP-FPM master's settings. */
  webmailConfigDir: string;
  /** Roundcube's SQLite database, temporary files and logs: webmail's user's alone. */
  webmailDataDir: string;
  /** The nginx file with webmail's server block (read inside nginx's http block). */
  webmailNginx: string;
  /** Debian's Roundcube: `public_html` is what nginx serves. */
  roundcubeDir: string;
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
export function signalThroughPidFile(signal: string, pidFile: string): string[] {
  return ['/usr/bin/pkill', signal, '--pidfile', pidFile];
}

/** The linux driver's settings on Debian. */
export function linuxDefaults(): LinuxConfig {
  const php = phpVersion();
  return {
    systemRoot: '/',
    components: [...LINUX_COMPONENTS],
    nginxDir: '/etc/nginx/sites-enabled',
    nginxHttpSettings: '/etc/nginx/conf.d/berth.conf',
    zoneDir: '/etc/bind/zones',
    dkimDir: '/etc/berth/dkim',
    // A large burst of createacct (a migration's): about 1.7 MB of keys, made once in idle time.
    dkimKeysAhead: 1000,
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
    phpIdleStop: 600,
    mariadbSocket: '/run/mysqld/mysqld.sock',
    cgroupParent: 'berth',
    accountProcesses: 256,
    accountMemory: 2048,
    certDir: '/etc/berth/certs',
    acmeChallengeDir: '/var/www/berth-acme',
    sitesDir: '/var/www/berth-sites',
    quota: 'auto',
    quotaFilesystem: null,
    quotaInodesPerMb: 100,
    testWeb: ['/usr/sbin/nginx', '-t', '-q'],
    // SIGHUP to the master: `nginx -s reload` parses the whole configuration (every site's
    // certificate) only to find the pid file, a second full parse on every reload.
    reloadWeb: signalThroughPidFile('-HUP', '/run/nginx.pid'),
    reloadDns: ['/usr/sbin/rndc', 'reload'],
    rndc: ['/usr/sbin/rndc'],
    rndcControl: '127.0.0.1:953',
    rndcKey: '/etc/bind/rndc.key',
    bindListen: '127.0.0.1',
    bindAddedZones: [
      '/usr/sbin/runuser',
      '-u',
      'bind',
      '--',
      '/usr/bin/named-nzd2nzf',
      '/var/cache/bind/_default.nzd',
    ],
    checkZone: ['/usr/bin/named-checkzone', '-q'],
    checkBindConfig: ['/usr/bin/named-checkconf', '-p'],
    mailDir: '/etc/berth/mail',
    postfixMapDir: '/etc/postfix/berth',
    dovecotMapDir: '/etc/dovecot/berth',
    opendkimMapDir: '/etc/opendkim/berth',
    mailAddress: '*',
    imapPort: 143,
    submissionPort: 587,
    postfixQueueDir: '/var/spool/postfix',
    mailDnsServer: '',
    mailQueueLimit: 50,
    mailQueueMessages: 1000,
    mailQueueListsLimit: 20,
    mailQueueListsMessages: 1000,
    listsDir: '/var/spool/berth-lists',
    listsPort: 10026,
    reloadMail: [],
    postfixPidFile: '/var/spool/postfix/pid/master.pid',
    reloadDkim: [],
    opendkimPidFile: '/run/opendkim/opendkim.pid',
    jailTemplate: '/home/.berth-jail',
    sshdConfig: '/etc/ssh/sshd_config.d/berth.conf',
    pamSshd: '/etc/pam.d/sshd',
    reloadSsh: ['/usr/bin/pkill', '-HUP', '--pidfile', '/run/sshd.pid'],
    ftpConfig: '/etc/pure-ftpd/berth.conf',
    ftpUserDir: '/etc/berth/ftp',
    ftpRootDir: '/var/lib/berth/ftp-roots',
    ftpUsers: '/etc/pure-ftpd/berth.passwd',
    ftpDatabase: '/etc/pure-ftpd/berth.pdb',
    ftpAddress: '*',
    ftpPort: 21,
    ftpPassivePorts: [30000, 30099],
    pamFtp: '/etc/pam.d/pure-ftpd',
    // cPanel's port for webmail over HTTPS, which hosting customers and their firewalls know.
    webmailPort: 2096,
    webmailUser: 'berth-webmail',
    webmailConfigDir: '/etc/berth/webmail',
    webmailDataDir: '/var/lib/berth-webmail',
    webmailNginx: '/etc/nginx/conf.d/berth-webmail.conf',
    roundcubeDir: '/var/lib/roundcube',
  };
}

const components: Reader = (value) => {
  const names = listOf(oneOf(...LINUX_COMPONENTS))(value) as string[];
  if (!names.includes('user')) throw new Refused('must include "user", which cannot be left out');
  return names;
};

/** `first:last`, two ports, the first not above the last. */
const portRange: Reader = (value) => {
  const match = typeof value === 'string' ? /^(\d{1,5}):(\d{1,5})$/.exec(value) : null;
  const [first, last] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (!match || first < 1024 || last > 65535 || first > last)
    throw new Refused('must be "first:last", two ports from 1024 to 65535, the first not above the last');
  return [first, last];
};

/** The keys of [linux] in berth.toml: the LinuxConfig field each sets and how its value is read. */
export const LINUX_KEYS: Record<string, [field: string, read: Reader]> = {
  'linux.system_root': ['linux.systemRoot', absolutePath],
  'linux.components': ['linux.components', components],
  'linux.nginx_dir': ['linux.nginxDir', absolutePath],
  'linux.nginx_http_settings': ['linux.nginxHttpSettings', (v) => (v === '' ? '' : absolutePath(v))],
  'linux.zone_dir': ['linux.zoneDir', absolutePath],
  'linux.dkim_dir': ['linux.dkimDir', absolutePath],
  'linux.dkim_keys_ahead': ['linux.dkimKeysAhead', wholeNumber(0, 100_000)],
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
  'linux.php_idle_stop': ['linux.phpIdleStop', wholeNumber(10, 86_400)],
  'linux.mariadb_socket': ['linux.mariadbSocket', absolutePath],
  'linux.cgroup_parent': [
    'linux.cgroupParent',
    textValue({ pattern: /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, what: 'a control group name' }),
  ],
  'linux.account_processes': ['linux.accountProcesses', unlimitedOr(wholeNumber(16, 1_000_000))],
  'linux.account_memory': ['linux.accountMemory', unlimitedOr(wholeNumber(64, 1_048_576))],
  'linux.cert_dir': ['linux.certDir', absolutePath],
  'linux.acme_challenge_dir': ['linux.acmeChallengeDir', absolutePath],
  'linux.sites_dir': ['linux.sitesDir', absolutePath],
  'linux.quota': ['linux.quota', oneOf(...QUOTA_SETTINGS)],
  'linux.quota_filesystem': ['linux.quotaFilesystem', (v) => (v === '' ? null : absolutePath(v))],
  'linux.quota_inodes_per_mb': ['linux.quotaInodesPerMb', positive],
  'linux.test_web': ['linux.testWeb', command],
  'linux.reload_web': ['linux.reloadWeb', command],
  'linux.reload_dns': ['linux.reloadDns', command],
  'linux.rndc': ['linux.rndc', command],
  'linux.rndc_control': ['linux.rndcControl', controlAddress],
  'linux.rndc_key': ['linux.rndcKey', absolutePath],
  'linux.bind_added_zones': ['linux.bindAddedZones', command],
  'linux.bind_listen': ['linux.bindListen', dnsServer],
  'linux.check_zone': ['linux.checkZone', command],
  'linux.check_bind_config': ['linux.checkBindConfig', command],
  'linux.mail_dir': ['linux.mailDir', absolutePath],
  'linux.postfix_map_dir': ['linux.postfixMapDir', absolutePath],
  'linux.dovecot_map_dir': ['linux.dovecotMapDir', absolutePath],
  'linux.opendkim_map_dir': ['linux.opendkimMapDir', absolutePath],
  'linux.mail_address': ['linux.mailAddress', (v) => (v === '*' ? '*' : listenAddress(v))],
  'linux.imap_port': ['linux.imapPort', servicePort],
  'linux.submission_port': ['linux.submissionPort', servicePort],
  'linux.postfix_queue_dir': ['linux.postfixQueueDir', absolutePath],
  'linux.mail_dns_server': ['linux.mailDnsServer', dnsServer],
  'linux.mail_queue_limit': ['linux.mailQueueLimit', unlimitedOr(wholeNumber(1, 1_048_576))],
  'linux.mail_queue_messages': ['linux.mailQueueMessages', unlimitedOr(wholeNumber(1, 10_000_000))],
  'linux.mail_queue_lists_limit': ['linux.mailQueueListsLimit', unlimitedOr(wholeNumber(1, 1_048_576))],
  'linux.mail_queue_lists_messages': [
    'linux.mailQueueListsMessages',
    unlimitedOr(wholeNumber(1, 10_000_000)),
  ],
  'linux.lists_dir': ['linux.listsDir', absolutePath],
  'linux.lists_port': ['linux.listsPort', servicePort],
  'linux.reload_mail': ['linux.reloadMail', command],
  'linux.postfix_pid_file': ['linux.postfixPidFile', absolutePath],
  'linux.reload_dkim': ['linux.reloadDkim', command],
  'linux.opendkim_pid_file': ['linux.opendkimPidFile', absolutePath],
  'linux.jail_template': ['linux.jailTemplate', absolutePath],
  'linux.sshd_config': ['linux.sshdConfig', absolutePath],
  'linux.pam_sshd': ['linux.pamSshd', absolutePath],
  'linux.reload_ssh': ['linux.reloadSsh', command],
  'linux.ftp_config': ['linux.ftpConfig', absolutePath],
  'linux.ftp_user_dir': ['linux.ftpUserDir', absolutePath],
  'linux.ftp_root_dir': ['linux.ftpRootDir', absolutePath],
  'linux.ftp_users': ['linux.ftpUsers', absolutePath],
  'linux.ftp_database': ['linux.ftpDatabase', absolutePath],
  'linux.ftp_address': ['linux.ftpAddress', (v) => (v === '*' ? '*' : listenAddress(v))],
  'linux.ftp_port': ['linux.ftpPort', servicePort],
  'linux.ftp_passive_ports': ['linux.ftpPassivePorts', portRange],
  'linux.pam_ftp': ['linux.pamFtp', absolutePath],
  'linux.webmail_port': ['linux.webmailPort', servicePort],
  'linux.webmail_user': [
    'linux.webmailUser',
    textValue({ pattern: /^[a-z_][a-z0-9_-]*$/, what: 'a user name' }),
  ],
  'linux.webmail_config_dir': ['linux.webmailConfigDir', absolutePath],
  'linux.webmail_data_dir': ['linux.webmailDataDir', absolutePath],
  'linux.webmail_nginx': ['linux.webmailNginx', absolutePath],
  'linux.roundcube_dir': ['linux.roundcubeDir', absolutePath],
};
