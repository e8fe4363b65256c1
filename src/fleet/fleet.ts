// One API over a fleet of servers (CONTRACT §12). A call runs where it arrives, in one store
// transaction; what it changes on an account's system is done by the account's own server. When
// that is another server, this one asks it to run the change's steps and keep them open; they are
// settled with the transaction: kept when it commits, undone when it rolls back. An account moves
// between servers the same way: its new server's steps are open until the store, in one
// transaction, names it.
//
// Fleet is what the rest of Berth holds; it puts together the fleet's parts: the servers and where
// a new account goes (servers.ts), calls to the other servers (calls.ts), changes made on another
// server and kept open until settled (forwarding.ts), moves (moves.ts), and backups kept on another
// server (backups.ts).
import type { Readable } from 'node:stream';
import type { Principal } from '../operations/principal.ts';
import type { SystemChange } from '../provision/changes.ts';
import type { AccountExport, Backups, HeldElsewhere, RestoreRequest } from '../provision/driver.ts';
import type { Account } from '../store/accounts.ts';
import type { AccountObjects } from '../store/objects.ts';
import type { Db } from '../store/schema.ts';
import type { HostingProfile } from '../store/servers.ts';
import { partsOn, remoteBackups } from './backups.ts';
import { PeerCalls } from './calls.ts';
import type { FleetDeps } from './context.ts';
import { ChangeForwarding } from './forwarding.ts';
import { AccountMoves, type MoveReport } from './moves.ts';
import { FleetServers } from './servers.ts';

export class Fleet {
  readonly self: string;
  readonly #servers: FleetServers;
  readonly #calls: PeerCalls;
  readonly #forwarding: ChangeForwarding;
  readonly #moves: AccountMoves;
  readonly #driver: FleetDeps['driver'];

  constructor(deps: FleetDeps) {
    this.self = deps.config.nodeName;
    this.#driver = deps.driver;
    this.#servers = new FleetServers(deps);
    this.#calls = new PeerCalls(deps);
    this.#forwarding = new ChangeForwarding(deps, this.#calls);
    this.#moves = new AccountMoves(deps, this.#servers, this.#calls, this.#forwarding);
  }

  // The fleet's servers (servers.ts).

  hosting(server: string | null): HostingProfile {
    return this.#servers.hosting(server);
  }

  refresh(): Promise<void> {
    return this.#servers.refresh();
  }

  place(db: Db, requested: string | undefined): Promise<{ server: string; profile: HostingProfile }> {
    return this.#servers.place(db, requested);
  }

  // Calls to the others (calls.ts).

  ensureSecret(): Promise<void> {
    return this.#calls.ensureSecret();
  }

  secret(): Promise<string | null> {
    return this.#calls.secret();
  }

  nameTaken(server: string, user: string): Promise<boolean> {
    return this.#calls.nameTaken(server, user);
  }

  /**
   * The backups of the server that holds an account (`server`; null: this one), asked of it when
   * it is another (backups.ts); null when this server's driver keeps none.
   */
  backupsOn(server: string | null): Backups | null {
    if (server === null || server === this.self) return this.#driver.backups ?? null;
    return this.#driver.backups ? remoteBackups(this.#calls, server) : null;
  }

  /**
   * A snapshot `server`'s repository holds, for a restore on this one: its parts asked of it;
   * undefined when `server` is this one (the restore reads its own repository).
   */
  heldOn(server: string, user: string, snapshot: string, request: RestoreRequest): HeldElsewhere | undefined {
    if (server === this.self) return undefined;
    return { server, parts: () => partsOn(this.#calls, server, user, snapshot, request) };
  }

  /**
   * Restores into the account, on its own server, from a snapshot `holder`'s repository holds
   * (it may be another server than the account's: the restore then takes its parts from there).
   */
  restoreFrom(
    holder: string,
    account: Account,
    objects: AccountObjects,
    snapshot: string,
    request: RestoreRequest,
  ): Promise<void> {
    const server = account.server ?? this.self;
    const backups = this.backupsOn(server);
    if (!backups) throw new Error('this server keeps no backups');
    // The account's server, when it is another, asks the holder for the parts itself.
    const held: HeldElsewhere | undefined =
      holder === server
        ? undefined
        : { server: holder, parts: () => partsOn(this.#calls, holder, account.user, snapshot, request) };
    return backups.restore(account, objects, snapshot, request, held);
  }

  // Changes on another server, kept open until settled (forwarding.ts).

  beginRemote(trx: Db, transaction: string): Promise<void> {
    return this.#forwarding.beginRemote(trx, transaction);
  }

  applyOn(server: string, transaction: string, change: SystemChange, principal: Principal): Promise<void> {
    return this.#forwarding.applyOn(server, transaction, change, principal);
  }

  settleOn(servers: Iterable<string>, transaction: string, outcome: 'commit' | 'undo'): Promise<void> {
    return this.#forwarding.settleOn(servers, transaction, outcome);
  }

  applyHere(transaction: string, change: SystemChange): Promise<void> {
    return this.#forwarding.applyHere(transaction, change);
  }

  settleHere(transaction: string, outcome: 'commit' | 'undo'): Promise<void> {
    return this.#forwarding.settleHere(transaction, outcome);
  }

  settleEarlierChanges(user: string, except?: string): Promise<void> {
    return this.#forwarding.settleEarlierChanges(user, except);
  }

  waitForEnd(transaction: string): Promise<void> {
    return this.#forwarding.waitForEnd(transaction);
  }

  start(): void {
    this.#forwarding.start();
  }

  close(): void {
    this.#forwarding.close();
  }

  // Moves (moves.ts).

  requestMove(user: string, to: string): Promise<MoveReport> {
    return this.#moves.requestMove(user, to);
  }

  moveHere(user: string, to: string): Promise<MoveReport> {
    return this.#moves.moveHere(user, to);
  }

  receiveHere(transaction: string, account: Account, from: string, objects: AccountObjects): Promise<void> {
    return this.#moves.receiveHere(transaction, account, from, objects);
  }

  exportHere(user: string): Promise<AccountExport | null> {
    return this.#moves.exportHere(user);
  }

  filesHere(user: string): Promise<Readable> {
    return this.#moves.filesHere(user);
  }
}
