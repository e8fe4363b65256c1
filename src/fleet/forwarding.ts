// A change to an account's system made by another server than the one the call arrived at
// (CONTRACT §12), both sides. The calling server readies its store transaction, asks the account's
// server to run the change's steps and keep them open, and tells it how the transaction ended: the
// steps are kept when it commits, undone when it rolls back. A settle message that never arrives is
// made up for: the called server learns that the transaction ended from a lock it held, and whether
// it committed from a mark it wrote.

import { nodeUnavailable } from '../core/errors.ts';
import { type Principal, principalMessage } from '../operations/principal.ts';
import { changeMessage, domainsOfChange, type SystemChange, stepsFor } from '../provision/changes.ts';
import { runSteps, type Step, StepFailed, StepRefused, undoSteps } from '../provision/driver.ts';
import type { Account } from '../store/accounts.ts';
import type { Db } from '../store/schema.ts';
import {
  findServer,
  holdTransactionLock,
  isCommitted,
  markCommitted,
  transactionEnded,
} from '../store/servers.ts';
import {
  FLEET_PATHS,
  NotHere,
  type PeerCalls,
  type PeerReply,
  SETTLE_TIMEOUT_MS,
  STEPS_TIMEOUT_MS,
} from './calls.ts';
import type { FleetDeps } from './context.ts';

/** Steps kept open longer than this, with no settle message, are settled by asking the store. */
const UNSETTLED_AFTER_MS = 3_000;
const SETTLE_CHECK_MS = 1_000;
/** How long recovery or a later change waits for another server's transaction to end. */
const TRANSACTION_WAIT_MS = 120_000;

/** Steps this server ran for another server's transaction, kept until that transaction ends. */
interface OpenSteps {
  transaction: string;
  user: string;
  journalId: string;
  done: Step[];
  since: number;
}

export class ChangeForwarding {
  readonly self: string;
  readonly #deps: Pick<FleetDeps, 'store' | 'driver' | 'journal' | 'log'>;
  readonly #calls: PeerCalls;
  /** By transaction id. */
  readonly #open = new Map<string, OpenSteps[]>();
  #timer: NodeJS.Timeout | null = null;
  #checking = false;

  constructor(deps: FleetDeps, calls: PeerCalls) {
    this.#deps = deps;
    this.self = deps.config.nodeName;
    this.#calls = calls;
  }

  get #db(): Db {
    return this.#deps.store.db;
  }

  // The calling side.

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
    await this.stepsOn(
      server,
      change.account.user,
      FLEET_PATHS.steps,
      { transaction, change: changeMessage(change), principal: principalMessage(principal) },
      STEPS_TIMEOUT_MS,
    );
  }

  /** Asks a server to run steps (a change, a move) and keep them open; its refusal as an error. */
  async stepsOn(server: string, user: string, path: string, body: object, timeoutMs: number): Promise<void> {
    const peer = await this.#calls.peer(server, user);
    let reply: PeerReply;
    try {
      reply = await this.#calls.post(peer, path, body, timeoutMs);
    } catch (error) {
      this.#deps.log.warn({ server, user, err: error }, 'a server of the fleet could not be reached');
      throw nodeUnavailable({ server, user });
    }
    const { status, answer } = reply;
    if (status === 200) return;
    if (status === 422 && typeof answer.step === 'string') {
      const cause =
        typeof answer.param === 'string' && typeof answer.reason === 'string'
          ? new StepRefused(answer.param, answer.reason)
          : new Error(`on the server ${server}: ${String(answer.message)}`);
      throw new StepFailed(answer.step, cause);
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
          if (peer)
            await this.#calls.post(peer, FLEET_PATHS.settle, { transaction, outcome }, SETTLE_TIMEOUT_MS);
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
    await this.runOpen(transaction, account, stepsFor(this.#deps.driver, change), domainsOfChange(change));
  }

  /**
   * Runs steps for another server's transaction, journalled (with the account's other `domains`
   * they touch), and keeps them open until settled.
   */
  async runOpen(transaction: string, account: Account, steps: Step[], domains: string[] = []): Promise<void> {
    const { journal } = this.#deps;
    if (steps.length === 0) return;
    const journalId = journal.begin({
      user: account.user,
      domain: account.domain,
      homedir: account.homedir,
      operation: steps[0]!.name,
      startedAt: new Date().toISOString(),
      transaction,
      domains,
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
