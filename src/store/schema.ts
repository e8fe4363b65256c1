// The tables, as Kysely sees them. Switches are stored as 0/1 integers and limits as integers with
// NULL for `unlimited`, so one schema serves every dialect.
import type { Generated, Kysely, Selectable, Transaction } from 'kysely';

export interface AccountTable {
  user: string;
  domain: string;
  contact_email: string;
  package: string;
  feature: string;
  owner: string;
  /** The owner an account had before it came to own itself, restored by terminatereseller. */
  previous_owner: string | null;
  homedir: string;
  language: string;
  theme: string;
  mailserver: string;
  dkim: number;
  spf: number;
  use_registrar_ns: number;
  nameservers: string;
  setup_at: string;
  dedicated_ipv4: string | null;
  dedicated_ipv6: string | null;
  shell_enabled: number;
  reseller: number;
  /** A fresh id each time the account becomes a reseller; null while it is none. */
  reseller_id: string | null;
  selfown: number;
  alpha: number;
  reseller_limit: number | null;
  reseller_bandwidth: number | null;
  reseller_quota: number | null;
  addondomains: number | null;
  parkeddomains: number | null;
  subdomains: number | null;
  email_accounts: number | null;
  ftp: number | null;
  sql: number | null;
  maillist: number | null;
  bandwidth: number | null;
  quota: number | null;
  mailquota: number | null;
  suspended: number;
  suspend_reason: string | null;
  suspended_at: string | null;
  suspended_by: string | null;
  quota_usage: number;
  bandwidth_usage: number;
  /** The server whose system holds it; null until a server claims an account made before fleets. */
  server: string | null;
  /** Its system user's uid (and group's gid), never another account's; null until its server records it. */
  uid: number | null;
  /**
   * The account's password as a SHA-512 crypt hash, what its holder logs in with on any server
   * (holder-credentials.ts); null for an account made before the store kept it.
   */
  password_hash: string | null;
}

/** An API token an account's holder made (CONTRACT §14). */
export interface ApiTokenTable {
  /** SHA-256 of the token, hex: the token itself is shown once and kept nowhere. */
  hash: string;
  user: string;
  name: string;
  /** ISO times. */
  created_at: string;
  last_used_at: string | null;
}

export interface PackageTable {
  name: string;
  feature: string;
  quota: number | null;
  bandwidth: number | null;
  addondomains: number | null;
  parkeddomains: number | null;
  subdomains: number | null;
  email_accounts: number | null;
  ftp: number | null;
  sql: number | null;
  maillist: number | null;
  mailquota: number | null;
  ipv4: number;
  ipv6: number;
  shell: number;
}

export interface ApiUserTable {
  /** The API account itself, whatever its name: idempotency keys belong to it. */
  id: string;
  name: string;
  password_hash: string;
  access: 'open' | 'restricted';
  /** JSON array of addresses and CIDR ranges. */
  allowed_ips: string;
  reseller: string | null;
  /** The bound reseller's `reseller_id` when it was bound: the binding holds while they match. */
  reseller_id: string | null;
  created_at: string;
  updated_at: string;
  last_used_at: string | null;
}

export interface AuditTable {
  id: Generated<number>;
  at: string;
  api_user: string;
  reseller: string | null;
  /** The kind of principal (`admin`, `reseller`, `holder`); null before it was known. */
  principal: string | null;
  /** How it came: `api`, `portal`, `cli`, `panel`, `sso`, `password`, `token`. */
  via: string | null;
  /** The account holder an administrator or reseller acted for. */
  acting_for: string | null;
  address: string;
  operation: string;
  target: string | null;
  status: number;
  code: string | null;
}

/** One failed authentication: the lock-out counts these over a sliding window. */
export interface AuthFailureTimeTable {
  address: string;
  at_ms: number;
}

export interface AuthLockTable {
  address: string;
  locked_until_ms: number;
}

export interface PortalSessionTable {
  /** SHA-256 of the session id: the cookie alone opens a session, the store alone does not. */
  id_hash: string;
  csrf: string;
  created_ms: number;
  last_seen_ms: number;
}

/** A holder's panel session (CONTRACT §14): the portal's kind, naming the account it belongs to. */
export interface HolderSessionTable {
  /** SHA-256 of the session id, as for the portal's. */
  id_hash: string;
  user: string;
  /** When the account was made: a later account of the same name does not inherit the session. */
  account_setup_ms: number;
  /** How the holder logged in: `panel` (password) or `sso` (create_user_session). */
  via: string;
  csrf: string;
  created_ms: number;
  last_seen_ms: number;
}

export interface IdempotencyKeyTable {
  /** Whose key: idempotencyOwner of the principal (an API account's id, an account holder). */
  owner: string;
  key: string;
  request_hash: string;
  /** The HTTP status of the stored answer; 0 while the first call is still running. */
  status: number;
  body: string;
  created_ms: number;
}

export interface EventTable {
  id: string;
  type: string;
  /** The event as delivered: JSON. */
  payload: string;
  created_ms: number;
}

export interface DeliveryTable {
  event_id: string;
  /** `hook:<file name>` or `webhook:<url>`. */
  target: string;
  attempts: Generated<number>;
  next_attempt_ms: number;
  delivered_ms: number | null;
  last_error: string | null;
}

/** A server of the fleet sharing this store (CONTRACT §12). */
export interface ServerTable {
  name: string;
  advertise_url: string;
  driver: string;
  /** 1: no new accounts are placed here. */
  draining: number;
  started_at: string;
  heartbeat_at: string;
  /** SHA-256 fingerprint of the certificate at advertise_url; null when it serves without TLS. */
  tls_fingerprint: string | null;
  weight: number;
  /** JSON: the HostingProfile accounts placed there get. */
  profile: string;
}

/** A transaction that committed a change other servers made on their systems for it. */
export interface FleetCommitTable {
  id: string;
  at: string;
}

/**
 * An account held by a change whose system steps are running: its row as it was before (JSON of
 * the stored row; null when the change creates it) and, for a package edit, the package's.
 */
export interface PendingChangeTable {
  user: string;
  txn: string;
  /** The server running the steps; it restores the rows if it dies before they end. */
  server: string;
  domain: string;
  before: string | null;
  /** JSON of the rows of the account's objects before, by table (ObjectRows); null: not noted. */
  objects: string | null;
  package: string | null;
  created_ms: number;
}

/** A domain of an account (CONTRACT §14); unique across the store. */
export interface DomainTable {
  domain: string;
  user: string;
  kind: 'main' | 'addon' | 'parked' | 'subdomain';
  /** The directory it serves, relative to the home; null for a parked domain (it serves the main site). */
  docroot: string | null;
  /** ISO time. */
  created_at: string;
  /** 'elsewhere' when the domain's mail is another server's (migration 0018); else null. */
  mail: string | null;
  /**
   * The domain's labels in reverse order (reversedName): the domains under a name, by range. Set
   * where a row is put in the store (object-rows.ts), never carried with the row between servers.
   */
  reversed?: string;
}

/** A mailbox of an account (CONTRACT §14): its password as a SHA-512 crypt hash only. */
export interface MailboxTable {
  email: string;
  user: string;
  password_hash: string;
  /** In MB; null for none. */
  quota: number | null;
  /** ISO time. */
  created_at: string;
}

/** A forwarder of an account (CONTRACT §14). */
export interface ForwarderTable {
  email: string;
  user: string;
  /** The addresses mail to `email` goes to, comma-separated. */
  destinations: string;
  /** ISO time. */
  created_at: string;
}

/** A mailing list of an account (CONTRACT §14), run by mlmmj. */
export interface MailingListTable {
  email: string;
  user: string;
  /** The one address that gets mail to `<list>+owner@`. */
  owner: string;
  /** The members the holder added, comma-separated (none: empty). */
  members: string;
  /** ISO time. */
  created_at: string;
}

/** A cron job of an account (CONTRACT §14): a schedule of five cron fields and a one-line command. */
export interface CronJobTable {
  /** Short and stable: lower-case base32, unique across the store. */
  id: string;
  user: string;
  schedule: string;
  command: string;
  /** ISO time. */
  created_at: string;
}

/** A MariaDB database of an account (CONTRACT §14): `<user>_<suffix>`, unique across the store. */
export interface DatabaseTable {
  name: string;
  user: string;
  /** ISO time. */
  created_at: string;
}

/** A MariaDB user of an account (CONTRACT §14), at `localhost`: its password as MariaDB's hash only. */
export interface DatabaseUserTable {
  name: string;
  user: string;
  /** mysql_native_password: `*` and 40 upper-case hex digits. */
  password_hash: string;
  /** The account's databases it has every privilege on, comma-separated (empty for none). */
  grants: string;
  /** ISO time. */
  created_at: string;
}

/** An FTP account of an account (CONTRACT §14): its password as a SHA-512 crypt hash only. */
export interface FtpAccountTable {
  user: string;
  /** The part before `@<main domain>`. */
  login: string;
  password_hash: string;
  /** Relative to the home; '' for the home itself. */
  directory: string;
  /** In MB; null for none. */
  quota: number | null;
  /** ISO time. */
  created_at: string;
}

/** A backup run (CONTRACT §15): queued, running, done or failed (after its last attempt). */
/** A server whose repository holds snapshots of a user (kept after a move and after removal). */
export interface BackupHolderTable {
  user: string;
  server: string;
  /** ISO time of the first snapshot it took. */
  first_at: string;
}

export interface BackupJobTable {
  /** Lower-case base32, unique across the store. */
  id: string;
  user: string;
  /** The server whose system holds the account, which alone runs the job. */
  server: string;
  /** `user` while queued or running, null after: at most one such job per account. */
  active_user: string | null;
  state: 'queued' | 'running' | 'done' | 'failed';
  /** `schedule` or `call` (backupacct, berth backup run). */
  reason: string;
  attempts: number;
  /** ISO time the job may be taken (again, after a failure). */
  next_attempt: string;
  /** ISO times. */
  created_at: string;
  finished_at: string | null;
  /** The restic snapshot it made. */
  snapshot: string | null;
  /** The last attempt's failure. */
  error: string | null;
}

/** A single sign-on token (CONTRACT §14), kept as its hash only, until used or expired. */
export interface SsoTokenTable {
  /** SHA-256 of the token, hex. */
  token_hash: string;
  user: string;
  /** The panel page it opens. */
  page: string;
  expires_ms: number;
}

/** The lowest uid no account was ever given (one row, `accounts`). */
export interface UidMarkTable {
  name: string;
  next_uid: number;
}

export interface SettingTable {
  key: string;
  value: string;
}

export interface Database {
  accounts: AccountTable;
  packages: PackageTable;
  api_users: ApiUserTable;
  audit_log: AuditTable;
  auth_failure_times: AuthFailureTimeTable;
  auth_locks: AuthLockTable;
  settings: SettingTable;
  uid_mark: UidMarkTable;
  servers: ServerTable;
  fleet_commits: FleetCommitTable;
  pending_changes: PendingChangeTable;
  domains: DomainTable;
  mailboxes: MailboxTable;
  forwarders: ForwarderTable;
  mailing_lists: MailingListTable;
  cron_jobs: CronJobTable;
  databases: DatabaseTable;
  database_users: DatabaseUserTable;
  ftp_accounts: FtpAccountTable;
  backup_jobs: BackupJobTable;
  backup_holders: BackupHolderTable;
  api_tokens: ApiTokenTable;
  portal_sessions: PortalSessionTable;
  sso_tokens: SsoTokenTable;
  holder_sessions: HolderSessionTable;
  idempotency_keys: IdempotencyKeyTable;
  events: EventTable;
  deliveries: DeliveryTable;
}

/**
 * The tables of an account's objects (CONTRACT §14), each row naming its account in `user`: what
 * pending changes put back with the account's row. A new kind of object adds its table here.
 */
export const OBJECT_TABLES = [
  'domains',
  'mailboxes',
  'forwarders',
  'cron_jobs',
  'mailing_lists',
  'databases',
  'database_users',
  'ftp_accounts',
] as const satisfies readonly (keyof Database)[];
export type ObjectTable = (typeof OBJECT_TABLES)[number];
/** The rows of an account's objects, by table. */
export type ObjectRows = { [T in ObjectTable]: Database[T][] };

/** A database handle or an open transaction: every repository function takes one first. */
export type Db = Kysely<Database> | Transaction<Database>;

/** An account's row as accounts.ts maps it; its password hash is read and written apart. */
export type AccountRow = Omit<AccountTable, 'password_hash'>;
export type PackageRow = PackageTable;
export type ApiUserRow = ApiUserTable;
export type DomainRow = DomainTable;
export type MailboxRow = MailboxTable;
export type ForwarderRow = ForwarderTable;
export type CronJobRow = CronJobTable;
export type MailingListRow = MailingListTable;
export type DatabaseRow = DatabaseTable;
export type DatabaseUserRow = DatabaseUserTable;
export type FtpAccountRow = FtpAccountTable;
export type AuditRow = Selectable<AuditTable>;
