// One API over a fleet of servers (CONTRACT §12). A call runs where it arrives, in one store
// transaction; what it changes on an account's system is done by the account's own server. When
// that is another server, this one asks it to run the change's steps and keep them open; they are
// settled with the transaction: kept when it commits, undone when it rolls back. A settle message
// that never arrives is made up for: the other server learns that the transaction ended from a lock
// it held, and whether it committed from a mark it wrote. An account moves between servers the
// same way: its new server's steps are open until the store, in one transaction, names it.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';
import { ApiError, apiError, catalogue, type ErrorCode, invalid, nodeUnavailable } from '../core/errors.ts';
import { type Principal, principalMessage } from '../operations/principal.ts';
import { changeMessage, type SystemChange, stepsFor } from '../provision/changes.ts';
import {
  type AccountExport,
  type Driver,
  type MovedAccount,
  runSteps,
  type Step,
  StepFailed,
  undoSteps,
} from '../provision/driver.ts';
import type { Journal } from '../provision/journal.ts';
import { type Account, findAccount, saveAccount, toRow } from '../store/accounts.ts';
import type { Store } from '../store/open.ts';
import { AccountBusy } from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import {
  accountsHeld,
  findServer,
  type HostingProfile,
  holdTransactionLock,
  isCommitted,
  markCommitted,
  type Server,
  serversWithState,
  transactionEnded,
} from '../store/servers.ts';
import { getSetting } from '../store/settings.ts';
import { postToPeer, signedHeaders, streamFromPeer, Unreachable } from './client.ts';

export const FLEET_PATHS = {
  steps: '/fleet/v1/steps',
  settle: '/fleet/v1/settle',
  nameTaken: '/fleet/v1/name-taken',
  move: '/fleet/v1/move',
  receive: '/fleet/v1/receive',
  export: '/fleet/v1/export',
  files: '/fleet/v1/files',
} as const;

/** Steps may reload services: they get this long to answer. */
export const STEPS_TIMEOUT_MS = 120_000;
/** A move answers when the account's files have been copied: it may be silent that long. */
export const MOVE_TIMEOUT_MS = 60 * 60_000;
/** A settle message is bookkeeping: a short wait, then the other server finds out for itself. */
const SETTLE_TIMEOUT_MS = 5_000;
/** Steps kept open longer than this, with no settle message, are settled by asking the store. */
const UNSETTLED_AFTER_MS = 3_000;
const SETTLE_CHECK_MS = 1_000;
/** How long recovery or a later change waits for another server's transaction to end. */
const TRANSACTION_WAIT_MS = 120_000;

const SECRET_SETTING = 'fleet_secret';

/** The hosting side of this server's configuration, which accounts placed on it take. */
export function profileOf(config: Config): HostingProfile {
  return {
    sharedIpv4: config.sharedIpv4,
    sharedIpv6: config.sharedIpv6,
    shell: config.shell,
    homeBase: config.homeBase,
    nameservers: [...config.nameservers],
    ipPool: {
      ipv4: [...config.ipPool.ipv4],
      ipv6: [...config.ipPool.ipv6],
      resellerShare: config.ipPool.resellerShare,
    },
  };
}

/** What `berth move-account` did: whether the old server has let go of everything of the account. */
export interface MoveReport {
  from: string;
  to: string;
  removed: boolean;
}

/** The account is not on this server: the caller's view of the fleet is out of date. */
export class NotHere extends Error {}

/** Steps this server ran for another server's transaction, kept until that transaction ends. */
interface OpenSteps {
  transaction: string;
  user: string;
  journalId: string;
  done: Step[];
  since: number;
}

export interface FleetDeps {
  config: Config;
  store: Store;
  driver: Driver;
  journal: Journal;
  log: Logger;
}

export class Fleet {
  readonly self: string;
  readonly #deps: FleetDeps;
  readonly #own: HostingProfile;
  #profiles = new Map<string, HostingProfile>();
  #secret: string | null = null;
  /** By transaction id. */
  readonly #open = new Map<string, OpenSteps[]>();
  #timer: NodeJS.Timeout | null = null;
  #checking = false;

  constructor(deps: FleetDeps) {
    this.#deps = deps;
    this.self = deps.config.nodeName;
    this.#own = profileOf(deps.config);
  }

  get #db(): Db {
    return this.#deps.store.db;
  }

  /** What accounts on `server` take from its configuration: its shared addresses, its shell. */
  hosting(server: string | null): HostingProfile {
    if (server === null || server === this.self) return this.#own;
    return this.#profiles.get(server) ?? this.#own;
  }

  /** Reads the other servers' profiles again (at start, with each heartbeat, when placing). */
  async refresh(): Promise<void> {
    this.#remember(await serversWithState(this.#db, Date.now()));
  }

  #remember(servers: readonly Server[]): void {
    const profiles = new Map<string, HostingProfile>();
    for (const server of servers) if (server.profile) profiles.set(server.name, server.profile);
    this.#profiles = profiles;
  }

  /** Makes the fleet's shared secret if no server has yet (serve, before it registers). */
  async ensureSecret(): Promise<void> {
    await this.#db
      .insertInto('settings')
      .values({ key: SECRET_SETTING, value: randomBytes(32).toString('base64url') })
      .onConflict((conflict) => conflict.column('key').doNothing())
      .execute();
  }

  /** The fleet's shared secret, kept in the store; null before any server of the fleet started. */
  async secret(): Promise<string | null> {
    this.#secret ??= (await getSetting(this.#db, SECRET_SETTING)) ?? null;
    return this.#secret;
  }

  /**
   * The server a new account goes to: the one asked for (it must be up and not draining), else the
   * up, non-draining server with the fewest accounts for its weight; this server when the fleet
   * has no other. Runs under createacct's lock, so that counts do not move meanwhile.
   */
  async place(db: Db, requested: string | undefined): Promise<{ server: string; profile: HostingProfile }> {
    const servers = await serversWithState(db, Date.now());
    this.#remember(servers);
    const profile = (name: string) => this.hosting(name);
    const candidates = servers.map((server) => ({
      name: server.name,
      weight: server.weight,
      // This server is up while it runs this call, whatever its last heartbeat says.
      state: server.name === this.self && server.state === 'down' ? 'up' : server.state,
    }));
    if (!candidates.some((candidate) => candidate.name === this.self))
      candidates.push({ name: this.self, weight: this.#deps.config.nodeWeight, state: 'up' });
    if (requested !== undefined) {
      const server = candidates.find((candidate) => candidate.name === requested);
      if (!server) throw invalid('server', `there is no server named ${requested} (berth nodes lists them)`);
      if (server.state !== 'up')
        throw invalid('server', `the server ${requested} is ${server.state} and takes no new account`);
      return { server: requested, profile: profile(requested) };
    }
    const open = candidates.filter((candidate) => candidate.state === 'up');
    if (open.length === 0) throw nodeUnavailable({ server: this.self });
    if (open.length === 1) return { server: open[0]!.name, profile: profile(open[0]!.name) };
    // Counted only when there is a choice: a single server never pays for it.
    const held = await accountsHeld(db);
    const load = (candidate: (typeof open)[number]) =>
      (held.get(candidate.name) ?? 0) / Math.max(1, candidate.weight);
    open.sort((a, b) => load(a) - load(b) || a.name.localeCompare(b.name));
    return { server: open[0]!.name, profile: profile(open[0]!.name) };
  }

  async #peer(name: string, user?: string): Promise<Server> {
    const peer = await findServer(this.#db, name);
    if (!peer) throw nodeUnavailable({ server: name, user });
    return peer;
  }

  /** Signs a request as this server's for `peer` alone, with the fleet's secret. */
  async #signer(peer: string): Promise<(path: string, body: string) => Record<string, string>> {
    const secret = await this.secret();
    if (secret === null)
      throw new Unreachable('the fleet has no secret yet: no server of it has started', false);
    return (path, body) => signedHeaders(secret, { from: this.self, to: peer }, path, body);
  }

  async #post(peer: Server, path: string, body: object, timeoutMs: number) {
    return postToPeer(peer, path, body, await this.#signer(peer.name), timeoutMs);
  }

  /** Whether `server`'s system already has a user or group of that name. */
  async nameTaken(server: string, user: string): Promise<boolean> {
    if (server === this.self) return this.#deps.driver.nameTaken(user);
    const peer = await this.#peer(server, user);
    try {
      const { status, answer } = await this.#post(peer, FLEET_PATHS.nameTaken, { user }, SETTLE_TIMEOUT_MS);
      if (status === 200 && typeof answer.taken === 'boolean') return answer.taken;
      this.#deps.log.error({ server, status, answer }, 'a server of the fleet refused a question');
    } catch (error) {
      this.#deps.log.warn({ server, err: error }, 'a server of the fleet could not be reached');
    }
    throw nodeUnavailable({ server, user });
  }

  /**
   * Readies `trx` to carry changes made on other servers: the lock that tells them when it ends,
   * and the mark that tells them it committed.
   */
  async beginRemote(trx: Db, transaction: string): Promise<void> {
    await holdTransactionLock(trx, transaction);
    await markCommitted(trx, transaction, new Date());
  }

  /**
   * Has the account's server run the change's steps, kept open until `settleOn`. The principal of
   * the call goes with it: that server checks the change is within its scope.
   */
  async applyOn(
    server: string,
    transaction: string,
    change: SystemChange,
    principal: Principal,
  ): Promise<void> {
    await this.#stepsOn(
      server,
      change.account.user,
      FLEET_PATHS.steps,
      { transaction, change: changeMessage(change), principal: principalMessage(principal) },
      STEPS_TIMEOUT_MS,
    );
  }

  /** Asks a server to run steps (a change, a move) and keep them open; its refusal as an error. */
  async #stepsOn(server: string, user: string, path: string, body: object, timeoutMs: number): Promise<void> {
    const peer = await this.#peer(server, user);
    let reply: { status: number; answer: Record<string, unknown> };
    try {
      reply = await this.#post(peer, path, body, timeoutMs);
    } catch (error) {
      this.#deps.log.warn({ server, user, err: error }, 'a server of the fleet could not be reached');
      throw nodeUnavailable({ server, user });
    }
    const { status, answer } = reply;
    if (status === 200) return;
    if (status === 422 && typeof answer.step === 'string') {
      throw new StepFailed(answer.step, new Error(`on the server ${server}: ${String(answer.message)}`));
    }
    this.#deps.log.error({ server, user, status, answer }, 'a server of the fleet refused a change');
    throw nodeUnavailable({ server, user });
  }

  /** Tells each server that ran steps for the transaction how it ended; one not told finds out. */
  async settleOn(servers: Iterable<string>, transaction: string, outcome: 'commit' | 'undo'): Promise<void> {
    await Promise.all(
      [...servers].map(async (server) => {
        try {
          const peer = await findServer(this.#db, server);
          if (peer) await this.#post(peer, FLEET_PATHS.settle, { transaction, outcome }, SETTLE_TIMEOUT_MS);
        } catch (error) {
          this.#deps.log.warn(
            { server, transaction, outcome, err: error },
            'could not tell a server how a transaction ended: it will find out from the store',
          );
        }
      }),
    );
  }

  // The called side.

  /** Runs another server's change to an account here and keeps its steps open until settled. */
  async applyHere(transaction: string, change: SystemChange): Promise<void> {
    const { account } = change;
    if ((account.server ?? this.self) !== this.self)
      throw new NotHere(`${account.user} is not on ${this.self}`);
    await this.settleEarlierChanges(account.user, transaction);
    await this.#runOpen(transaction, account, stepsFor(this.#deps.driver, change));
  }

  /** Runs steps for another server's transaction, journalled, and keeps them open until settled. */
  async #runOpen(transaction: string, account: Account, steps: Step[]): Promise<void> {
    const { journal } = this.#deps;
    if (steps.length === 0) return;
    const journalId = journal.begin({
      user: account.user,
      domain: account.domain,
      homedir: account.homedir,
      operation: steps[0]!.name,
      startedAt: new Date().toISOString(),
      transaction,
    });
    const done: Step[] = [];
    try {
      await runSteps(steps, done);
    } catch (error) {
      await this.#undo(done);
      journal.end(journalId);
      throw error;
    }
    const open = this.#open.get(transaction) ?? [];
    open.push({ transaction, user: account.user, journalId, done, since: Date.now() });
    this.#open.set(transaction, open);
  }

  // Moving an account (`berth move-account`): the command asks the account's server, which has
  // the new server make the account from what it exports, switches the store in the same
  // transaction, and once that has committed, removes what it still has of the account.

  /** Asks the account's server to move it to `to` (the command's side). */
  async requestMove(user: string, to: string): Promise<MoveReport> {
    const account = await findAccount(this.#db, user);
    if (!account) throw apiError('account_not_found', { user }, 'user');
    const from = account.server;
    if (from === null)
      throw invalid('user', `${user} is on no server yet: start the server that holds it first`);
    if (from === to) throw invalid('to', `${user} is on ${to} already`);
    const peer = await this.#peer(from, user);
    let reply: { status: number; answer: Record<string, unknown> };
    try {
      reply = await this.#post(peer, FLEET_PATHS.move, { user, to }, MOVE_TIMEOUT_MS);
    } catch (error) {
      this.#deps.log.warn({ server: from, user, err: error }, 'a server of the fleet could not be reached');
      throw nodeUnavailable({ server: from, user });
    }
    const { status, answer } = reply;
    if (status === 200) return { from, to, removed: answer.removed === true };
    if (typeof answer.code === 'string' && answer.code in catalogue && typeof answer.info === 'string')
      throw new ApiError(answer.code as ErrorCode, answer.info, answer.param as string | undefined);
    throw apiError('internal', {});
  }

  /** Moves an account of this server to `to` (the account's server's side). */
  async moveHere(user: string, to: string): Promise<MoveReport> {
    const transaction = randomUUID();
    const { journal } = this.#deps;
    let asked = false;
    let journalId: string | null = null;
    let before: Account;
    try {
      before = await this.#db.transaction().execute(async (trx) => {
        // Locked until the commit: no other change to the account meanwhile, here or anywhere.
        const account = await findAccount(trx, user, { lock: true });
        if (!account) throw apiError('account_not_found', { user }, 'user');
        if ((account.server ?? this.self) !== this.self)
          throw invalid('user', `${user} is on ${account.server}, not ${this.self}`);
        if (to === this.self) throw invalid('to', `${user} is on ${to} already`);
        if (account.dedicatedIpv4 || account.dedicatedIpv6)
          throw invalid(
            'user',
            `${user} has a dedicated address of ${this.self}; give it the shared address first (changepackage)`,
          );
        const target = (await serversWithState(trx, Date.now())).find((server) => server.name === to);
        if (!target) throw invalid('to', `there is no server named ${to} (berth nodes lists them)`);
        if (target.state !== 'up')
          throw invalid('to', `the server ${to} is ${target.state} and takes no account`);
        if (await this.nameTaken(to, user))
          throw invalid('to', `the server ${to} already has a system user or group named ${user}`);
        const profile = target.profile ?? this.hosting(to);
        const moved: Account = {
          ...account,
          server: to,
          homedir: `${profile.homeBase.replace(/\/+$/, '')}/${user}`,
          nameservers: [...profile.nameservers],
        };
        await this.beginRemote(trx, transaction);
        // Journalled from before the switch: if this server stops after the commit, before it
        // has removed the account, recovery finds it moved away and removes it then.
        journalId = journal.begin({
          user,
          domain: account.domain,
          homedir: account.homedir,
          operation: 'move-account',
          startedAt: new Date().toISOString(),
          transaction,
        });
        asked = true;
        await this.#stepsOn(
          to,
          user,
          FLEET_PATHS.receive,
          { transaction, account: toRow(moved), from: this.self },
          MOVE_TIMEOUT_MS,
        );
        await saveAccount(trx, moved);
        return account;
      });
    } catch (error) {
      if (journalId) journal.end(journalId);
      if (asked) await this.settleOn([to], transaction, 'undo');
      if (error instanceof AccountBusy)
        throw invalid('user', `${user} is being changed by another call; move it once that call ends`);
      throw error;
    }
    await this.settleOn([to], transaction, 'commit');
    return { from: this.self, to, removed: await this.#forget(before, journalId!) };
  }

  /**
   * Removes what this server has of an account that lives elsewhere now. If it cannot finish, its
   * journal entry stays: recovery finishes it when the server starts again.
   */
  async #forget(account: Account, id: string): Promise<boolean> {
    const { journal, driver, log } = this.#deps;
    try {
      await driver.purge(account);
    } catch (error) {
      log.error(
        { err: error, user: account.user },
        'could not remove a moved account from its old server; it is removed when the server starts again',
      );
      return false;
    }
    journal.end(id);
    return true;
  }

  /** Makes an account that moves here, from what its old server exports, and keeps it open. */
  async receiveHere(transaction: string, account: Account, from: string): Promise<void> {
    if (account.server !== this.self) throw new NotHere(`${account.user} is not moving to ${this.self}`);
    const { user } = account;
    const peer = await this.#peer(from, user);
    const exported = await this.#post(peer, FLEET_PATHS.export, { user }, STEPS_TIMEOUT_MS)
      .then(({ status, answer }) => {
        if (status !== 200) throw new Error(`${from} answered ${status}: ${String(answer.error)}`);
        return answer.account as AccountExport | null;
      })
      .catch((error: unknown) => {
        throw new StepFailed('account export', error);
      });
    // A server that keeps nothing for its accounts (the record driver) hands nothing over; one
    // like it has nothing to make.
    if (exported === null) {
      if (this.#deps.driver.name === 'record') return;
      throw new StepFailed('account export', new Error(`${from} keeps no system for ${user}`));
    }
    const moved: MovedAccount = {
      ...exported,
      files: async () =>
        streamFromPeer(peer, FLEET_PATHS.files, { user }, await this.#signer(peer.name), MOVE_TIMEOUT_MS),
    };
    await this.#runOpen(transaction, account, this.#deps.driver.receiveAccount(account, moved));
  }

  /** What an account of this server needs on another (its new server asks, while it moves). */
  async exportHere(user: string): Promise<AccountExport | null> {
    return this.#deps.driver.exportAccount(await this.#ownAccount(user));
  }

  /** An account of this server's own files, as a tar stream. */
  async filesHere(user: string): Promise<Readable> {
    return this.#deps.driver.accountFiles(await this.#ownAccount(user));
  }

  async #ownAccount(user: string): Promise<Account> {
    const account = await findAccount(this.#db, user);
    if (!account || (account.server ?? this.self) !== this.self)
      throw new NotHere(`${user} is not on ${this.self}`);
    return account;
  }

  /** Keeps (commit) or undoes the steps run here for a transaction; unknown ones are settled already. */
  async settleHere(transaction: string, outcome: 'commit' | 'undo'): Promise<void> {
    const open = this.#open.get(transaction);
    if (!open) return;
    this.#open.delete(transaction);
    for (const steps of [...open].reverse()) {
      if (outcome === 'undo') await this.#undo(steps.done);
      this.#deps.journal.end(steps.journalId);
    }
    if (outcome === 'undo')
      this.#deps.log.warn(
        { transaction, users: open.map((s) => s.user) },
        'undid steps of a transaction that rolled back',
      );
  }

  /**
   * Before a change to an account's system: steps another server's transaction left open for it are
   * settled first, once that transaction has ended (the store's locks make it end before another
   * change to the same account can get this far).
   */
  async settleEarlierChanges(user: string, except?: string): Promise<void> {
    for (const [transaction, open] of [...this.#open]) {
      if (transaction === except || !open.some((steps) => steps.user === user)) continue;
      await this.waitForEnd(transaction);
      await this.#settleFromStore(transaction);
    }
  }

  /** Waits until the transaction of that id has ended, for at most TRANSACTION_WAIT_MS. */
  async waitForEnd(transaction: string): Promise<void> {
    const until = Date.now() + TRANSACTION_WAIT_MS;
    while (!(await transactionEnded(this.#db, transaction)) && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async #settleFromStore(transaction: string): Promise<void> {
    if (!this.#open.has(transaction)) return;
    const committed = await isCommitted(this.#db, transaction);
    await this.settleHere(transaction, committed ? 'commit' : 'undo');
  }

  async #undo(done: Step[]): Promise<void> {
    await undoSteps(done, (step, error) =>
      this.#deps.log.error({ err: error, step: step.name }, 'could not undo a provisioning step'),
    );
  }

  /** Settles, from the store, open steps whose settle message has not come. */
  async #settleUnsettled(): Promise<void> {
    if (this.#checking) return;
    this.#checking = true;
    try {
      const now = Date.now();
      for (const [transaction, open] of [...this.#open]) {
        if (open.some((steps) => now - steps.since < UNSETTLED_AFTER_MS)) continue;
        if (await transactionEnded(this.#db, transaction)) await this.#settleFromStore(transaction);
      }
    } finally {
      this.#checking = false;
    }
  }

  /** While serving: settles what settle messages missed. */
  start(): void {
    this.#timer ??= setInterval(() => {
      this.#settleUnsettled().catch((error: unknown) =>
        this.#deps.log.error({ err: error }, 'could not settle steps run for another server'),
      );
    }, SETTLE_CHECK_MS);
    this.#timer.unref();
  }

  /** Stops the timer; open steps stay in the journal, which recovery settles at the next start. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}
