// Moving an account to another server of the fleet (`berth move-account`, CONTRACT §12): the
// command asks the account's server, which has the new server make the account from what it
// exports, switches the store in the same transaction, and once that has committed, removes what it
// still has of the account. The new server's steps are open, as a forwarded change's are
// (forwarding.ts), until the store, in that one transaction, names it.
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ApiError, apiError, catalogue, type ErrorCode, invalid, nodeUnavailable } from '../core/errors.ts';
import { type AccountExport, type MovedAccount, StepFailed } from '../provision/driver.ts';
import { type Account, findAccount, saveAccount, toRow } from '../store/accounts.ts';
import { type AccountObjects, objectsOf, toObjectRows } from '../store/objects.ts';
import { AccountBusy } from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import { serversWithState } from '../store/servers.ts';
import {
  FLEET_PATHS,
  MOVE_TIMEOUT_MS,
  NotHere,
  type PeerCalls,
  type PeerReply,
  STEPS_TIMEOUT_MS,
} from './calls.ts';
import { streamFromPeer } from './client.ts';
import type { FleetDeps } from './context.ts';
import type { ChangeForwarding } from './forwarding.ts';
import type { FleetServers } from './servers.ts';

/** What `berth move-account` did: whether the old server has let go of everything of the account. */
export interface MoveReport {
  from: string;
  to: string;
  removed: boolean;
}

export class AccountMoves {
  readonly self: string;
  readonly #deps: Pick<FleetDeps, 'store' | 'driver' | 'journal' | 'log'>;
  readonly #servers: FleetServers;
  readonly #calls: PeerCalls;
  readonly #forwarding: ChangeForwarding;

  constructor(deps: FleetDeps, servers: FleetServers, calls: PeerCalls, forwarding: ChangeForwarding) {
    this.#deps = deps;
    this.self = deps.config.nodeName;
    this.#servers = servers;
    this.#calls = calls;
    this.#forwarding = forwarding;
  }

  get #db(): Db {
    return this.#deps.store.db;
  }

  /** Asks the account's server to move it to `to` (the command's side). */
  async requestMove(user: string, to: string): Promise<MoveReport> {
    const account = await findAccount(this.#db, user);
    if (!account) throw apiError('account_not_found', { user }, 'user');
    const from = account.server;
    if (from === null)
      throw invalid('user', `${user} is on no server yet: start the server that holds it first`);
    if (from === to) throw invalid('to', `${user} is on ${to} already`);
    const peer = await this.#calls.peer(from, user);
    let reply: PeerReply;
    try {
      reply = await this.#calls.post(peer, FLEET_PATHS.move, { user, to }, MOVE_TIMEOUT_MS);
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
    let others: string[] = [];
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
        if (await this.#calls.nameTaken(to, user))
          throw invalid('to', `the server ${to} already has a system user or group named ${user}`);
        const profile = target.profile ?? this.#servers.hosting(to);
        const moved: Account = {
          ...account,
          server: to,
          homedir: `${profile.homeBase.replace(/\/+$/, '')}/${user}`,
          nameservers: [...profile.nameservers],
        };
        // Every domain of the account goes with it.
        const objects = await objectsOf(trx, user);
        others = objects.domains.map((d) => d.domain).filter((d) => d !== account.domain);
        await this.#forwarding.beginRemote(trx, transaction);
        // Journalled from before the switch: if this server stops after the commit, before it
        // has removed the account, recovery finds it moved away and removes it then.
        journalId = journal.begin({
          user,
          domain: account.domain,
          homedir: account.homedir,
          operation: 'move-account',
          startedAt: new Date().toISOString(),
          transaction,
          domains: others,
        });
        asked = true;
        await this.#forwarding.stepsOn(
          to,
          user,
          FLEET_PATHS.receive,
          { transaction, account: toRow(moved), from: this.self, objects: toObjectRows(user, objects) },
          MOVE_TIMEOUT_MS,
        );
        await saveAccount(trx, moved);
        return account;
      });
    } catch (error) {
      if (journalId) journal.end(journalId);
      if (asked) await this.#forwarding.settleOn([to], transaction, 'undo');
      if (error instanceof AccountBusy)
        throw invalid('user', `${user} is being changed by another call; move it once that call ends`);
      throw error;
    }
    await this.#forwarding.settleOn([to], transaction, 'commit');
    return { from: this.self, to, removed: await this.#forget(before, journalId!, others) };
  }

  /**
   * Removes what this server has of an account that lives elsewhere now. If it cannot finish, its
   * journal entry stays: recovery finishes it when the server starts again.
   */
  async #forget(account: Account, id: string, domains: string[]): Promise<boolean> {
    const { journal, driver, log } = this.#deps;
    try {
      await driver.purge(account, domains);
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
  async receiveHere(
    transaction: string,
    account: Account,
    from: string,
    objects: AccountObjects,
  ): Promise<void> {
    if (account.server !== this.self) throw new NotHere(`${account.user} is not moving to ${this.self}`);
    const { user } = account;
    const peer = await this.#calls.peer(from, user);
    const exported = await this.#calls
      .post(peer, FLEET_PATHS.export, { user }, STEPS_TIMEOUT_MS)
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
        streamFromPeer(
          peer,
          FLEET_PATHS.files,
          { user },
          await this.#calls.signer(peer.name),
          MOVE_TIMEOUT_MS,
        ),
    };
    const domains = objects.domains.map((d) => d.domain).filter((domain) => domain !== account.domain);
    await this.#forwarding.runOpen(
      transaction,
      account,
      this.#deps.driver.receiveAccount(account, moved, objects),
      domains,
    );
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
}
