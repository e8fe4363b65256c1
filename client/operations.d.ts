// Generated from the operation registry by npm run docs: do not edit.

/** The parameters of each operation. Limits take a number or "unlimited"; switches a boolean or "on"/"off". */
export interface OperationParams {
  /** Check credentials: answers {"username", "auth": "API"} without an envelope. */
  '': {};
  /** Test the connection and the credentials. */
  'test_connection': {};
  /** The server's 1, 5 and 15 minute load averages. */
  'load-average': {};
  /** Berth's release label and version. */
  'version': {};
  /** Create a hosting account. */
  'createacct': {
    /** Main domain */
    domain: string;
    /** Account user name */
    user: string;
    /** Contact e-mail address */
    email: string;
    /** Package name */
    package: string;
    /** Password; 20 random characters when omitted (never returned) */
    password?: string;
    /** Control panel language code; default `en` */
    language?: string;
    /** Theme; default `default` */
    theme?: string;
    /** `local` or `remote`; default `local` */
    mailserver?: 'local' | 'remote';
    /** DKIM signing; default `on` */
    dkim?: boolean | 'on' | 'off';
    /** SPF record; default `on` */
    spf?: boolean | 'on' | 'off';
    /** Make the account a reseller; default `off` */
    reseller?: boolean | 'on' | 'off';
    /** The reseller owns its own account (administrator only); default `off` */
    resellerself?: boolean | 'on' | 'off';
    /** Use the registrar's name servers; default `off` */
    use_registrar_ns?: boolean | 'on' | 'off';
    /** Dedicated IPv4 address from the pool; default the package's */
    'ipv4'?: boolean | 'on' | 'off';
    /** Dedicated IPv6 address from the pool; default the package's */
    'ipv6'?: boolean | 'on' | 'off';
    /** Shell access; default the package's */
    shell?: boolean | 'on' | 'off';
    /** Reseller combined bandwidth limit in MB; `unlimited` or a number */
    reseller_bandwidth?: number | 'unlimited';
    /** Number of accounts the reseller may create; `unlimited` or a number */
    reseller_limt?: number | 'unlimited';
    /** Reseller combined disk quota in MB; `unlimited` or a number */
    reseller_quota?: number | 'unlimited';
    /** Server of the fleet to place the account on (up, not draining); by default the one with the fewest accounts for its weight */
    server?: string;
    /** Disk quota in MB; `unlimited` or a number */
    quota?: number | 'unlimited';
    /** Bandwidth in MB; `unlimited` or a number */
    bandwidth?: number | 'unlimited';
    /** Addon domains; `unlimited` or a number */
    addondomains?: number | 'unlimited';
    /** Parked domains; `unlimited` or a number */
    parkeddomains?: number | 'unlimited';
    /** Subdomains; `unlimited` or a number */
    subdomains?: number | 'unlimited';
    /** E-mail accounts; `unlimited` or a number */
    email_accounts?: number | 'unlimited';
    /** FTP accounts; `unlimited` or a number */
    ftp?: number | 'unlimited';
    /** Databases; `unlimited` or a number */
    sql?: number | 'unlimited';
    /** Mailing lists; `unlimited` or a number */
    maillist?: number | 'unlimited';
    /** Default e-mail quota in MB; `unlimited` or a number */
    mailquota?: number | 'unlimited';
  };
  /** Change an account's password. */
  'passwd': {
    /** Account user name */
    user: string;
    /** New password; 20 random characters when omitted (never returned) */
    password?: string;
  };
  /** Make an account a reseller, or update the limits of one that is. */
  'setupreseller': {
    /** Account user name */
    user: string;
    /** The reseller owns its own account (administrator only) */
    selfown?: boolean | 'on' | 'off';
    /** Number of accounts it may create; default `unlimited` */
    reseller_limt?: number | 'unlimited';
    /** Combined bandwidth of its accounts in MB; default `unlimited` */
    reseller_bandwidth?: number | 'unlimited';
    /** Combined disk quota of its accounts in MB; default `unlimited` */
    reseller_quota?: number | 'unlimited';
    /** May create and manage resellers itself (administrator only) */
    alpha?: boolean | 'on' | 'off';
  };
  /** Remove reseller status. Its accounts pass to its own owner (if it owned itself, to the owner it had before). */
  'terminatereseller': {
    /** Account user name */
    user: string;
  };
  /** How many accounts there are (under a reseller: how many it owns). */
  'get_current_users_count': {};
  /** How many reseller accounts there are (under a reseller: among those it owns). */
  'get_current_reseller_count': {};
  /** The suspended accounts, with the reason and time of suspension. */
  'listsuspended': {};
  /** One account's record, with its usage. */
  'accountsummary': {
    /** Account user name */
    user: string;
  };
  /** Every account (under a reseller: the ones it owns), keyed by user name. */
  'listaccts': {};
  /** The package names, sorted, comma-separated. */
  'listpackages': {};
  /** Every account's record with its usage, and for resellers the usage of their accounts. */
  'usagestatistics': {};
  /** Change an account's contact e-mail address. */
  'changecontactemail': {
    /** Account user name */
    user: string;
    /** New contact e-mail address */
    email: string;
  };
  /** Suspend an account. Again on a suspended account: the time is kept, the reason replaced if given (a reseller cannot replace the administrator's). */
  'suspendacct': {
    /** Account user name */
    user: string;
    /** Why; shown in listsuspended (may hold tab and newline) */
    reason?: string;
  };
  /** Lift the suspension of an account. On an active account: 200, nothing changes. */
  'unsuspendacct': {
    /** Account user name */
    user: string;
  };
  /** Change an account's disk quota (MB, or `unlimited`). */
  'editquota': {
    /** Account user name */
    user: string;
    /** Disk quota in MB, or `unlimited` */
    quota: number | 'unlimited';
  };
  /** Move an account to another package: it takes the package's limits, feature list and shell. */
  'changepackage': {
    /** Account user name */
    user: string;
    /** Package name */
    package: string;
  };
  /** Remove an account and everything it has on the server. */
  'removeacct': {
    /** Account user name */
    user: string;
  };
  /** A URL that logs a browser into an account's control panel once, within 120 seconds, on the page asked for. */
  'create_user_session': {
    /** Account user name */
    user: string;
    /** The panel page the URL opens; home when omitted */
    page?: 'home' | 'domains' | 'email' | 'databases' | 'ftp' | 'cron' | 'backups' | 'security';
  };
  /** Add a hosting package (administrator only). Limits not given are `unlimited`. */
  'addpkg': {
    /** Package name (case-sensitive) */
    name: string;
    /** Disk quota in MB; `unlimited` or a number */
    quota?: number | 'unlimited';
    /** Bandwidth in MB; `unlimited` or a number */
    bandwidth?: number | 'unlimited';
    /** Addon domains; `unlimited` or a number */
    addondomains?: number | 'unlimited';
    /** Parked domains; `unlimited` or a number */
    parkeddomains?: number | 'unlimited';
    /** Subdomains; `unlimited` or a number */
    subdomains?: number | 'unlimited';
    /** E-mail accounts; `unlimited` or a number */
    email_accounts?: number | 'unlimited';
    /** FTP accounts; `unlimited` or a number */
    ftp?: number | 'unlimited';
    /** Databases; `unlimited` or a number */
    sql?: number | 'unlimited';
    /** Mailing lists; `unlimited` or a number */
    maillist?: number | 'unlimited';
    /** Default e-mail quota in MB; `unlimited` or a number */
    mailquota?: number | 'unlimited';
    /** Feature list name */
    feature?: string;
    /** Accounts get a dedicated IPv4 address */
    'ipv4'?: boolean | 'on' | 'off';
    /** Accounts get a dedicated IPv6 address */
    'ipv6'?: boolean | 'on' | 'off';
    /** Accounts get shell access */
    shell?: boolean | 'on' | 'off';
  };
  /** Change a package (administrator only); every account on it takes the values given. */
  'editpkg': {
    /** Package name */
    name: string;
    /** Disk quota in MB; `unlimited` or a number */
    quota?: number | 'unlimited';
    /** Bandwidth in MB; `unlimited` or a number */
    bandwidth?: number | 'unlimited';
    /** Addon domains; `unlimited` or a number */
    addondomains?: number | 'unlimited';
    /** Parked domains; `unlimited` or a number */
    parkeddomains?: number | 'unlimited';
    /** Subdomains; `unlimited` or a number */
    subdomains?: number | 'unlimited';
    /** E-mail accounts; `unlimited` or a number */
    email_accounts?: number | 'unlimited';
    /** FTP accounts; `unlimited` or a number */
    ftp?: number | 'unlimited';
    /** Databases; `unlimited` or a number */
    sql?: number | 'unlimited';
    /** Mailing lists; `unlimited` or a number */
    maillist?: number | 'unlimited';
    /** Default e-mail quota in MB; `unlimited` or a number */
    mailquota?: number | 'unlimited';
    /** Feature list name */
    feature?: string;
    /** Accounts get a dedicated IPv4 address */
    'ipv4'?: boolean | 'on' | 'off';
    /** Accounts get a dedicated IPv6 address */
    'ipv6'?: boolean | 'on' | 'off';
    /** Accounts get shell access */
    shell?: boolean | 'on' | 'off';
  };
  /** Delete a package no account uses (administrator only). The `default` package stays. */
  'killpkg': {
    /** Package name */
    name: string;
  };
  /** Start a backup of an account; answers at once with its job. */
  'backupacct': {
    /** Account user name */
    user: string;
  };
  /** An account's backups (snapshots), oldest first. */
  'listbackups': {
    /** Account user name */
    user: string;
  };
  /** Restore an account (or its files, mail, databases or one path) from one of its backups. */
  'restoreacct': {
    /** Account user name (a removed account is made again) */
    user: string;
    /** The snapshot, as listbackups gives it */
    snapshot: string;
    /** What to restore; all when omitted */
    what?: 'all' | 'files' | 'mail' | 'databases';
    /** One path below the home to restore (with what=files or all) */
    path?: string;
  };
}

export type OperationName = keyof OperationParams;

/** The parameters of each of an account holder's operations (BerthHolderClient, callForHolder). */
export interface HolderOperationParams {
  /** The holder's own account: its record, its usage and each limit as used and allowed. */
  'account_info': {};
  /** Change the account's password, giving the current one. */
  'change_password': {
    /** The password the account has now */
    current_password: string;
    /** The new password */
    password: string;
  };
  /** The holder's API tokens: name, when made, when last used. */
  'list_tokens': {};
  /** Make a named API token for the customer API; the token is shown in this answer only. */
  'add_token': {
    /** A name for the token, to tell it from the others */
    name: string;
  };
  /** Remove an API token: calls with it are refused from now on. */
  'remove_token': {
    /** The name of the token */
    name: string;
  };
  /** The account's domains: its main domain, addon and parked domains and subdomains. */
  'list_domains': {};
  /** Add an addon domain, a parked domain or a subdomain to the account. */
  'add_domain': {
    /** The domain; a subdomain given whole (`blog.example.com`) */
    domain: string;
    /** `addon`, `parked` or `subdomain` */
    type: 'addon' | 'parked' | 'subdomain';
    /** Document root of an addon domain or subdomain, relative to the home; default `public_html/<domain>` */
    docroot?: string;
  };
  /** Remove an addon domain, a parked domain or a subdomain from the account. */
  'remove_domain': {
    /** The domain to remove */
    domain: string;
  };
  /** The account's mailboxes (the account's own address is not one of them). */
  'list_mailboxes': {};
  /** Create a mailbox at an address of one of the account’s domains. */
  'add_mailbox': {
    /** The mailbox's address, in the account's main, addon or parked domain */
    email: string;
    /** Its password, for IMAP and submission (login: the whole address) */
    password: string;
    /** Its quota in MB, or `unlimited`; default and most the account's mailquota */
    quota?: number | 'unlimited';
  };
  /** Change a mailbox's password. */
  'change_mailbox_password': {
    /** The mailbox's address */
    email: string;
    /** Its new password */
    password: string;
  };
  /** Change a mailbox's quota. */
  'change_mailbox_quota': {
    /** The mailbox's address */
    email: string;
    /** Its quota in MB, or `unlimited`; at most the account's mailquota */
    quota: number | 'unlimited';
  };
  /** Remove a mailbox and the mail in it. */
  'remove_mailbox': {
    /** The mailbox's address */
    email: string;
  };
  /** The account's forwarders: addresses whose mail goes on to other addresses. */
  'list_forwarders': {};
  /** Forward mail to an address of one of the account’s domains to other addresses. */
  'add_forwarder': {
    /** The address forwarded, in the account's main, addon or parked domain */
    email: string;
    /** Where its mail goes: up to 20 addresses anywhere, comma-separated */
    to: string;
  };
  /** Remove a forwarder. */
  'remove_forwarder': {
    /** The forwarder's address */
    email: string;
  };
  /** The account's mailing lists, each with its owner and the members the holder added. */
  'list_mailing_lists': {};
  /** Create a mailing list at an address of one of the account’s domains. */
  'add_mailing_list': {
    /** The list's address, in the account's main, addon or parked domain */
    email: string;
    /** Its owner: an address anywhere, which gets mail to <list>+owner@<domain> */
    owner: string;
  };
  /** Remove a mailing list, its members and everything kept for it. */
  'remove_mailing_list': {
    /** The list's address */
    email: string;
  };
  /** Add a member to a mailing list. */
  'add_list_member': {
    /** The list's address */
    list: string;
    /** The member's address, anywhere */
    email: string;
  };
  /** Remove a member from a mailing list. */
  'remove_list_member': {
    /** The list's address */
    list: string;
    /** The member's address */
    email: string;
  };
  /** The account's cron jobs, oldest first. */
  'list_cron_jobs': {};
  /** Add a cron job: a command run on a schedule as the account's user, in its home. */
  'add_cron_job': {
    /** Five cron fields: minute hour day-of-month month day-of-week */
    schedule: string;
    /** The command, one line, run by /bin/sh as the account's user with the home as working directory; its output is discarded */
    command: string;
  };
  /** Remove a cron job of the account. */
  'remove_cron_job': {
    /** The id list_cron_jobs gives the job */
    id: string;
  };
  /** The account's MariaDB databases and database users. */
  'list_databases': {};
  /** Create a MariaDB database named `<user>_<suffix>`. */
  'add_database': {
    /** Its name: the suffix alone, or with the prefix `<user>_` */
    name: string;
  };
  /** Remove a MariaDB database of the account, with all its data. */
  'remove_database': {
    /** Its name, with or without the prefix `<user>_` */
    name: string;
  };
  /** Create a MariaDB user `<user>_<suffix>` at localhost, with its own password. */
  'add_database_user': {
    /** Its name: the suffix alone, or with the prefix `<user>_` */
    name: string;
    /** Its password */
    password: string;
  };
  /** Change a MariaDB user's password. */
  'change_database_password': {
    /** The database user's name, with or without the prefix `<user>_` */
    name: string;
    /** Its new password */
    password: string;
  };
  /** Remove a MariaDB user of the account. */
  'remove_database_user': {
    /** The database user's name, with or without the prefix `<user>_` */
    name: string;
  };
  /** Give a database user of the account all privileges on one of its databases. */
  'grant_database': {
    /** The database's name, with or without the prefix `<user>_` */
    database: string;
    /** The database user's name, with or without the prefix `<user>_` */
    dbuser: string;
  };
  /** Take from a database user of the account its privileges on one of its databases. */
  'revoke_database': {
    /** The database's name, with or without the prefix `<user>_` */
    database: string;
    /** The database user's name, with or without the prefix `<user>_` */
    dbuser: string;
  };
  /** The account's FTP accounts (the account's own login is not one of them). */
  'list_ftp_accounts': {};
  /** Create an FTP login confined to a directory of the home. */
  'add_ftp_account': {
    /** The login, before `@<main domain>` (the server adds the domain) */
    login: string;
    /** Its password, for FTP over TLS */
    password: string;
    /** The directory it is confined to, relative to the home, made when missing; default the home */
    directory?: string;
    /** Its quota in MB, or `unlimited` (the default) */
    quota?: number | 'unlimited';
  };
  /** Change an FTP account's password. */
  'change_ftp_password': {
    /** The FTP login, with or without `@<main domain>` */
    login: string;
    /** Its new password */
    password: string;
  };
  /** Remove an FTP login (the files it uploaded stay). */
  'remove_ftp_account': {
    /** The FTP login, with or without `@<main domain>` */
    login: string;
  };
  /** The account's backups (snapshots), oldest first. */
  'list_backups': {};
  /** Restore the account's files, a mailbox or a database from one of its backups. */
  'restore_backup': {
    /** The snapshot, as list_backups gives it */
    snapshot: string;
    /** What to restore */
    what: 'files' | 'mail' | 'database';
    /** With files: one path below the home (else every file) */
    path?: string;
    /** With mail: one mailbox (else all the mail) */
    email?: string;
    /** With database: the database to restore (its suffix alone, or its whole name) */
    database?: string;
  };
}

export type HolderOperationName = keyof HolderOperationParams;

export interface CreatedAccount {
  user: string;
  domain: string;
  contactemail: string;
  package: string;
  feature: string;
  /** The reseller that owns it, or root */
  owner: string;
  homedir: string;
  language: string;
  theme: string;
  mailserver: 'local' | 'remote';
  dkim: 'on' | 'off';
  spf: 'on' | 'off';
  /** YYYY-MM-DD HH:MM in the server’s time zone */
  setuptime: string;
  nameservers: string[];
  dedicatedip: {
    ipv4: string;
    ipv6: string;
    status: 'on' | 'off';
    status6: 'on' | 'off';
  };
  shell: {
    shell: string;
    status: 'on' | 'off';
  };
  reseller: {
    status: 'on' | 'off';
    selfown: 'on' | 'off';
    alpha: 'on' | 'off';
  };
  /** "unlimited" or a whole number */
  addondomains: string;
  /** "unlimited" or a whole number */
  parkeddomains: string;
  /** "unlimited" or a whole number */
  subdomains: string;
  /** "unlimited" or a whole number */
  email: string;
  /** "unlimited" or a whole number */
  ftp: string;
  /** "unlimited" or a whole number */
  sql: string;
  /** "unlimited" or a whole number */
  maillist: string;
  /** "unlimited" or a whole number */
  bandwidth: string;
  /** "unlimited" or a whole number */
  quota: string;
  /** "unlimited" or a whole number */
  mailquota: string;
  /** The server of the fleet whose system holds the account */
  server: string;
}

export interface ListedAccount extends CreatedAccount {
  is_reseller: 'yes' | 'no';
  is_suspended: 'yes' | 'no';
}

export interface SummaryAccount extends ListedAccount {
  /** MB used */
  bandwidth_usage: number;
  /** MB used */
  quota_usage: number;
}

export interface UsageAccount extends SummaryAccount {
  /** MB used */
  quota_usage_reseller: number;
  /** MB used */
  bandwidth_usage_reseller: number;
  reseller_data?: {
    accounts: string[];
    contactemail: string;
    ips: {
      ipv4: string;
      ipv6: string;
    };
    name: string;
    nameservers: string[];
    /** "unlimited" or a whole number */
    reseller_bandwidth: string;
    /** "unlimited" or a whole number */
    reseller_limt: string;
    /** "unlimited" or a whole number */
    reseller_quota: string;
  };
}

export interface SuspendedAccount {
  user: string;
  reason: string;
  /** Weekday, DD-Mon-YYYY HH:MM:SS, zone */
  suspendtime: string;
}

export interface Package {
  name: string;
  /** "unlimited" or a whole number */
  quota: string;
  /** "unlimited" or a whole number */
  bandwidth: string;
  /** "unlimited" or a whole number */
  addondomains: string;
  /** "unlimited" or a whole number */
  parkeddomains: string;
  /** "unlimited" or a whole number */
  subdomains: string;
  /** "unlimited" or a whole number */
  email_accounts: string;
  /** "unlimited" or a whole number */
  ftp: string;
  /** "unlimited" or a whole number */
  sql: string;
  /** "unlimited" or a whole number */
  maillist: string;
  /** "unlimited" or a whole number */
  mailquota: string;
  feature: string;
  ipv4: 'on' | 'off';
  ipv6: 'on' | 'off';
  shell: 'on' | 'off';
}

export interface Domain {
  domain: string;
  type: 'main' | 'addon' | 'parked' | 'subdomain';
  /** Relative to the home; a parked domain's is the main site's */
  docroot: string;
  /** When it was added, ISO 8601 */
  created: string;
}

export interface Mailbox {
  /** The whole address, its login for IMAP and submission */
  email: string;
  domain: string;
  /** In MB, or "unlimited" */
  quota: string;
  /** When it was made, ISO 8601 */
  created: string;
}

export interface Forwarder {
  email: string;
  domain: string;
  /** Where its mail goes */
  to: string[];
  /** When it was made, ISO 8601 */
  created: string;
}

export interface MailingList {
  /** The list's address: a post to it reaches every member */
  email: string;
  domain: string;
  /** Who gets mail to <list>+owner@<domain> */
  owner: string;
  /** The members the holder added, by address (those who subscribed by mail are the list’s own) */
  members: string[];
  /** When it was made, ISO 8601 */
  created: string;
}

export interface FtpAccount {
  /** The whole login, `<login>@<main domain>` */
  login: string;
  /** The directory it is confined to, relative to the home; '' for the home */
  directory: string;
  /** In MB, or "unlimited" */
  quota: string;
  /** When it was made, ISO 8601 */
  created: string;
}

export interface CronJob {
  /** Names the job in remove_cron_job */
  id: string;
  /** Five cron fields: minute hour day-of-month month day-of-week */
  schedule: string;
  /** One line, run by /bin/sh as the account's user, in the home */
  command: string;
  /** When it was added, ISO 8601 */
  created: string;
}

export interface Database {
  /** `<user>_<suffix>` */
  name: string;
  /** The database users granted it */
  users: string[];
  /** When it was made, ISO 8601 */
  created: string;
}

export interface DatabaseUser {
  /** `<user>_<suffix>`, its login at localhost */
  name: string;
  /** The databases it has every privilege on */
  databases: string[];
  /** When it was made, ISO 8601 */
  created: string;
}

/** What each operation resolves with: the `data` of its answer. */
export interface OperationResults {
  '': {
    username: string;
    auth: 'API';
  };
  'test_connection': {
    test: 'Connection successful';
  };
  'load-average': {
    /** The 1, 5 and 15 minute averages, space-separated */
    load_average: string;
  };
  'version': {
    /** Berth and the version */
    version: string;
    version_code: string;
  };
  'createacct': CreatedAccount;
  'passwd': string;
  'setupreseller': string;
  'terminatereseller': string;
  'get_current_users_count': {
    users: number;
  };
  'get_current_reseller_count': {
    reseller: number;
  };
  'listsuspended': {
    accounts: Record<string, SuspendedAccount>;
  };
  'accountsummary': {
    acct: SummaryAccount;
  };
  'listaccts': {
    accounts: Record<string, ListedAccount>;
  };
  'listpackages': {
    /** Package names, comma-separated */
    packages: string;
  };
  'usagestatistics': {
    accounts: Record<string, UsageAccount>;
  };
  'changecontactemail': string;
  'suspendacct': string;
  'unsuspendacct': string;
  'editquota': string;
  'changepackage': string;
  'removeacct': string;
  'create_user_session': {
    /** Opens the account’s control panel, logged in, once, within 120 seconds */
    url: string;
    /** When the URL stops working, in Unix seconds */
    expires: number;
  };
  'addpkg': Package;
  'editpkg': {
    package: Package;
    accounts_updated: number;
  };
  'killpkg': string;
  'backupacct': {
    /** The backup job, as berth backup list and the portal show it */
    job: string;
  };
  'listbackups': {
    snapshots: {
      /** The snapshot id restoreacct and restore_backup take */
      id: string;
      /** When it was taken, ISO 8601 */
      time: string;
      /** What restoring it gives, in MB (two decimals) */
      size: number;
      /** The server whose repository holds it (another than the account's after a move); any server restores it */
      server: string;
    }[];
  };
  'restoreacct': string;
}

/** What each of an account holder's operations resolves with. */
export interface HolderOperationResults {
  'account_info': {
    user: string;
    domain: string;
    contactemail: string;
    package: string;
    feature: string;
    /** The reseller that owns it, or root */
    owner: string;
    homedir: string;
    language: string;
    theme: string;
    mailserver: 'local' | 'remote';
    dkim: 'on' | 'off';
    spf: 'on' | 'off';
    /** YYYY-MM-DD HH:MM in the server’s time zone */
    setuptime: string;
    nameservers: string[];
    dedicatedip: {
      ipv4: string;
      ipv6: string;
      status: 'on' | 'off';
      status6: 'on' | 'off';
    };
    shell: {
      shell: string;
      status: 'on' | 'off';
    };
    reseller: {
      status: 'on' | 'off';
      selfown: 'on' | 'off';
      alpha: 'on' | 'off';
    };
    /** "unlimited" or a whole number */
    addondomains: string;
    /** "unlimited" or a whole number */
    parkeddomains: string;
    /** "unlimited" or a whole number */
    subdomains: string;
    /** "unlimited" or a whole number */
    email: string;
    /** "unlimited" or a whole number */
    ftp: string;
    /** "unlimited" or a whole number */
    sql: string;
    /** "unlimited" or a whole number */
    maillist: string;
    /** "unlimited" or a whole number */
    bandwidth: string;
    /** "unlimited" or a whole number */
    quota: string;
    /** "unlimited" or a whole number */
    mailquota: string;
    /** The server of the fleet whose system holds the account */
    server: string;
    is_reseller: 'yes' | 'no';
    is_suspended: 'yes' | 'no';
    /** MB used */
    bandwidth_usage: number;
    /** MB used */
    quota_usage: number;
    limits: {
      addondomains: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      parkeddomains: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      subdomains: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      email: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      ftp: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      sql: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      maillist: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      quota: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      bandwidth: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
      cron_jobs: {
        used: number;
        /** "unlimited" or a whole number */
        limit: string;
      };
    };
  };
  'change_password': string;
  'list_tokens': {
    /** The name the holder gave it */
    name: string;
    /** When it was made, ISO 8601 */
    created: string;
    /** When it was last used, ISO 8601 (to the minute); null if never */
    last_used: string | null;
  }[];
  'add_token': {
    /** The name the holder gave it */
    name: string;
    /** The token, shown this once: send it as Authorization: Bearer <token> */
    token: string;
    /** When it was made, ISO 8601 */
    created: string;
  };
  'remove_token': string;
  'list_domains': Domain[];
  'add_domain': Domain;
  'remove_domain': Domain;
  'list_mailboxes': Mailbox[];
  'add_mailbox': Mailbox;
  'change_mailbox_password': Mailbox;
  'change_mailbox_quota': Mailbox;
  'remove_mailbox': Mailbox;
  'list_forwarders': Forwarder[];
  'add_forwarder': Forwarder;
  'remove_forwarder': Forwarder;
  'list_mailing_lists': MailingList[];
  'add_mailing_list': MailingList;
  'remove_mailing_list': MailingList;
  'add_list_member': MailingList;
  'remove_list_member': MailingList;
  'list_cron_jobs': CronJob[];
  'add_cron_job': CronJob;
  'remove_cron_job': CronJob;
  'list_databases': {
    databases: Database[];
    users: DatabaseUser[];
  };
  'add_database': Database;
  'remove_database': Database;
  'add_database_user': DatabaseUser;
  'change_database_password': DatabaseUser;
  'remove_database_user': DatabaseUser;
  'grant_database': DatabaseUser;
  'revoke_database': DatabaseUser;
  'list_ftp_accounts': FtpAccount[];
  'add_ftp_account': FtpAccount;
  'change_ftp_password': FtpAccount;
  'remove_ftp_account': FtpAccount;
  'list_backups': {
    snapshots: {
      /** The snapshot id restoreacct and restore_backup take */
      id: string;
      /** When it was taken, ISO 8601 */
      time: string;
      /** What restoring it gives, in MB (two decimals) */
      size: number;
      /** The server whose repository holds it (another than the account's after a move); any server restores it */
      server: string;
    }[];
  };
  'restore_backup': string;
}
