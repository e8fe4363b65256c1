// The provisioning driver: what an operation does to the system beyond the store. Every change is
// a list of steps, each with its undo; they run in order and, when one fails, the finished ones are
// undone in reverse (see runSteps). The `record` driver keeps state only; the `linux` driver creates
// real system users, web server blocks and DNS zones.
import type { Readable } from 'node:stream';
import type { Account } from '../store/accounts.ts';
import type { AccountObjects } from '../store/objects.ts';

export interface Step {
  /** Named in the 500 provisioning_failed answer when it fails. */
  name: string;
  run(): Promise<void>;
  undo(): Promise<void>;
  /**
   * For a step that cannot be undone (a change's last): what it may leave done when it fails
   * partway, said in the failure's answer instead of "everything was undone".
   */
  leaves?: string;
}

export interface Usage {
  /** Disk space of the home directory, in MB rounded up. */
  quota: number;
  /** Bytes served this calendar month, in MB rounded up. */
  bandwidth: number;
  /** Why the disk space is a floor (its count stopped short), when it is. */
  partial?: string;
}

/** Where a domain's certificate stands (the linux driver's tls component keeps it). */
export interface CertificateState {
  /** fallback: the server's own, waiting for ACME; valid: from ACME; failed: ACME refused so far. */
  state: 'fallback' | 'valid' | 'failed';
  issuer: string;
  /** ISO times. */
  notAfter: string;
  attempts: number;
  nextAttempt: string;
  lastError: string | null;
}

/** An account's certificate as the administrator sees it (`berth certs`, the portal). */
export type CertificateRow = { user: string; domain: string } & Partial<CertificateState>;

/** What the driver's background work may read of the store. */
export interface AccountSource {
  account(user: string): Promise<Account | undefined>;
  accounts(): Promise<readonly Account[]>;
  /** The account's objects (its domains…). */
  objects(user: string): Promise<AccountObjects>;
}

export interface BackgroundLog {
  info(details: object, message: string): void;
  warn(details: object, message: string): void;
}

/**
 * What an account's old server hands its new one when it moves (`berth move-account`): what the
 * account needs to work as before and cannot be made anew. Secret: it travels only between the
 * fleet's servers, never to a log.
 */
export interface AccountExport {
  /** The system password's hash as the shadow file has it (`!`-prefixed while suspended). */
  passwordHash: string;
  /** The domain's certificate and key in one PEM, with its state; null when it has none. */
  certificate: { pem: string; state: CertificateState } | null;
  /** The private key the domain's mail is signed with, PEM; null when it is not signed. */
  dkimKey: string | null;
  /**
   * Each of the account's MariaDB databases as a consistent dump (mariadb-dump in one transaction),
   * by name; absent from a server of an earlier Berth, or with no databases.
   */
  databases?: Record<string, string>;
}

/** An account arriving from another server: its export, and its own files as a tar stream. */
export interface MovedAccount extends AccountExport {
  files(): Promise<Readable>;
}

/** What a restore puts back (CONTRACT §15): everything, the files, the mail or the databases. */
export type RestoreWhat = 'all' | 'files' | 'mail' | 'databases';

export interface RestoreRequest {
  what: RestoreWhat;
  /** One path below the home, as its components (files only). */
  path?: readonly string[];
  /** One mailbox, by its address (mail only). */
  email?: string;
  /** One database, by its name (databases only). */
  database?: string;
}

export interface BackupSnapshot {
  id: string;
  /** ISO time it was taken. */
  time: string;
}

/** An account's backups on its server (CONTRACT §15; the linux driver's backup component). */
/** A snapshot held by another server's repository: the server, and its parts (Backups.parts) asked of it. */
export interface HeldElsewhere {
  server: string;
  parts(): Promise<Readable>;
}

export interface Backups {
  /**
   * Takes a snapshot of the account: its files, mail, zones and what every kind adds (a database
   * dump), with `record` (the account's record and objects from the store, JSON) beside them.
   */
  backup(
    account: Account,
    objects: AccountObjects,
    record: string,
  ): Promise<{ snapshot: string; bytesProcessed: number; bytesAdded: number }>;
  /** The account's snapshots on this server, oldest first (also after its removal). */
  snapshots(user: string): Promise<BackupSnapshot[]>;
  /** How many bytes restoring one of them gives. */
  size(snapshot: string): Promise<number>;
  /** The `record` a snapshot holds. */
  record(user: string, snapshot: string): Promise<string>;
  /**
   * Puts back what the request names from the snapshot, exactly as it was there: one in this
   * server's repository, or, with `held`, one another server's holds, whose `parts` it takes.
   */
  restore(
    account: Account,
    objects: AccountObjects,
    snapshot: string,
    request: RestoreRequest,
    held?: HeldElsewhere,
  ): Promise<void>;
  /**
   * What a restore of `request` needs of one of the user's snapshots here, for another server to
   * restore from: a tar stream of `home/` (what of the home the request names) and `meta/` (the
   * record, zones and what each kind of object added).
   */
  parts(user: string, snapshot: string, request: RestoreRequest): Promise<Readable>;
  /** The account's home as it was in the snapshot, as a tar stream (nothing from outside it). */
  homeArchive(user: string, snapshot: string): Promise<Readable>;
  /**
   * Forgets what retention does not keep: of each account in `accounts`, per `backup_keep`; of
   * every other, all once its last snapshot is older than `backup_keep_removed`.
   */
  applyRetention(accounts: ReadonlySet<string>, now: Date): Promise<void>;
  /** Checks the repository (restic check, its structure), throwing what it finds. */
  check(): Promise<void>;
}

export interface Driver {
  readonly name: string;
  /** Backups of this server's accounts; none on a driver that keeps no system (the record driver). */
  readonly backups?: Backups;
  /** Whether the system already has a user of this name (createacct refuses it). */
  nameTaken(user: string): Promise<boolean>;
  // Each change is given the account's objects (its domains…); without them, its main domain alone.
  // A password comes with the hash the store keeps of it, when the caller made one: the system's
  // password is that hash, not a second one made of the same password.
  createAccount(account: Account, password: string, objects?: AccountObjects, passwordHash?: string): Step[];
  removeAccount(account: Account, objects?: AccountObjects): Step[];
  suspendAccount(account: Account, objects?: AccountObjects): Step[];
  unsuspendAccount(account: Account, objects?: AccountObjects): Step[];
  changePassword(account: Account, password: string, objects?: AccountObjects, passwordHash?: string): Step[];
  /** The quota, package, shell or any other limit changed from `before` to `after`. */
  changeLimits(before: Account, after: Account, objects?: AccountObjects): Step[];
  /** The account's objects changed from `before` to `after` (a domain added or removed). */
  changeObjects(account: Account, before: AccountObjects, after: AccountObjects): Step[];
  /** What the account needs on another server (a move); null when the driver keeps nothing. */
  exportAccount(account: Account): Promise<AccountExport | null>;
  /**
   * The account's own files (what it keeps below its home) as a tar stream, read as the account's
   * user; the stream fails, rather than ends, when not all of them could be read.
   */
  accountFiles(account: Account): Readable;
  /** Makes an account that arrives from another server, as it was there: files, mail, certificate. */
  receiveAccount(account: Account, moved: MovedAccount, objects?: AccountObjects): Step[];
  /**
   * Makes the system match the stored account, whatever an interrupted call left (recovery); what
   * it has of `strays`, domains the call had that no account has now, goes.
   */
  reconcile(account: Account, objects?: AccountObjects, strays?: readonly string[]): Promise<void>;
  /**
   * Removes every trace of an account the store does not have (recovery of an unfinished create),
   * or no longer has here (moved away), with those of its other `domains`.
   */
  purge(
    account: { user: string; domain: string; homedir: string },
    domains?: readonly string[],
  ): Promise<void>;
  /**
   * Every difference between the store's accounts, with every domain of each (`loadObjects`, by
   * user), and the system (`berth doctor`).
   */
  inspect(
    loadAccounts: () => Promise<readonly Account[]>,
    loadObjects?: () => Promise<ReadonlyMap<string, AccountObjects>>,
  ): Promise<string[]>;
  /**
   * What each account uses now, by user; an account the driver cannot tell about is left out.
   * `domains` names each account's domains, whose sites' traffic is its bandwidth (without an
   * entry, its main domain alone).
   */
  measureUsage(
    accounts: readonly Account[],
    domains?: ReadonlyMap<string, readonly string[]>,
  ): Promise<ReadonlyMap<string, Usage>>;
  /**
   * Every uid and gid this server's system has, and each system user's uid by name (for the
   * fleet's uid mark, CONTRACT §10); none when the driver makes no system users.
   */
  systemIds?(): { users: ReadonlyMap<string, number>; ids: number[] };
  /**
   * The account's password hash as this server's system keeps it (its shadow file), for an account
   * made before the store kept the hash; undefined when the driver keeps none.
   */
  systemPasswordHash?(user: string): string | undefined;
  /** Makes the server-wide files the driver needs (serve, before the first call). */
  prepare?(): Promise<void>;
  /** Starts what runs for each of this server's accounts (their PHP), when `serve` starts. */
  resume?(
    accounts: readonly Account[],
    objectsOf?: (user: string) => Promise<AccountObjects>,
  ): Promise<string[]>;
  /** Brings what each account made since under its disk quota (the linux driver's btrfs homes). */
  enforceQuotas?(accounts: readonly Account[]): Promise<void>;
  /** Work beside the calls while serving (certificates: obtained and renewed); close() stops it. */
  startBackgroundWork?(store: AccountSource, log: BackgroundLog): void;
  /** How many times each system service was reloaded since start, by name (the linux driver's). */
  reloadCounts?(): ReadonlyMap<string, number>;
  /** Each domain's certificate (every domain of each account given its objects), when the driver keeps them. */
  certificates?(
    accounts: readonly Account[],
    objects?: ReadonlyMap<string, AccountObjects>,
  ): CertificateRow[];
  close(): Promise<void>;
}

export class StepFailed extends Error {
  readonly step: string;
  /** What the step, one that cannot be undone, may leave done (Step.leaves). */
  readonly leaves: string | undefined;

  constructor(step: string, cause: unknown, leaves?: string) {
    super(`step ${step} failed: ${String(cause)}`, { cause });
    this.name = 'StepFailed';
    this.step = step;
    this.leaves = leaves;
  }
}

/**
 * What a step throws when it refuses what the call asked for, rather than failing: a document
 * root through a link the account planted. The call answers 400 invalid_parameter naming `param`.
 */
export class StepRefused extends Error {
  readonly param: string;

  constructor(param: string, reason: string) {
    super(reason);
    this.name = 'StepRefused';
    this.param = param;
  }
}

/**
 * Runs steps in order, recording each finished one in `done` so that the caller can undo them if
 * something later (another step, the commit) fails.
 */
export async function runSteps(steps: readonly Step[], done: Step[]): Promise<void> {
  for (const step of steps) {
    try {
      await step.run();
    } catch (error) {
      throw new StepFailed(step.name, error, step.leaves);
    }
    done.push(step);
  }
}

/** Undoes finished steps, last first; an undo that fails is reported and the rest still run. */
export async function undoSteps(done: Step[], report: (step: Step, error: unknown) => void): Promise<void> {
  for (const step of [...done].reverse()) {
    try {
      await step.undo();
    } catch (error) {
      report(step, error);
    }
  }
  done.length = 0;
}
