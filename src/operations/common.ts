// What several operations share: the account a call names in its scope, rights, reseller limits, and changing state with system
// steps so that a failure leaves nothing behind.
import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { apiError, nodeUnavailable } from '../core/errors.ts';
import type { Limit } from '../core/values.ts';
import { domainsOfChange, type SystemChange, stepsFor } from '../provision/changes.ts';
import { runSteps, type Step, undoSteps } from '../provision/driver.ts';
import { type Account, findAccountInScope, ownedTotals } from '../store/accounts.ts';
import { uniqueViolation } from '../store/errors.ts';
import { type AccountObjects, objectsOf } from '../store/objects.ts';
import {
  AccountBusy,
  holdAccounts,
  releaseAccounts,
  restoreAccounts,
  trackWrites,
} from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import type { Context } from './operation.ts';
import {
  type Administrator,
  actingFor,
  holderAccountOf,
  type Principal,
  type Reseller,
  resellerOf,
  scopeOf,
} from './principal.ts';

/**
 * The named account in the caller's scope; outside it, the account does not exist. Inside
 * changeState the row stays locked until the commit.
 */
export async function targetAccount(db: Db, principal: Principal, user: string): Promise<Account> {
  const account = await findAccountInScope(db, user, scopeOf(principal), { lock: db.isTransaction });
  if (!account) throw apiError('account_not_found', { user }, 'user');
  return account;
}

/**
 * The account on whose holder's side a call is (the holder's own, or the one acted for), read
 * afresh in the principal's scope; 403 for a principal on no holder's side.
 */
export async function holderAccount(db: Db, principal: Principal): Promise<Account> {
  const holder = holderAccountOf(principal);
  if (!holder) throw forbidden('This is an operation of an account holder.');
  return await targetAccount(db, principal, holder.user);
}

/**
 * The administrator or a reseller acting for the holder of `user` (CONTRACT §14), an account in
 * its scope: outside it, the account does not exist.
 */
export async function actingForHolder(
  db: Db,
  principal: Principal,
  user: string,
): Promise<Administrator | Reseller> {
  if (principal.kind === 'holder') throw forbidden('An account holder acts for its own account only.');
  return actingFor(principal, await targetAccount(db, principal, user));
}

export function forbidden(reason: string) {
  return apiError('forbidden', { reason });
}

/** setupreseller, terminatereseller and createacct reseller=on under a reseller need `alpha`. */
export function requireAlpha(principal: Principal, what: string): void {
  const reseller = resellerOf(principal);
  if (reseller && !reseller.reseller?.alpha) {
    throw forbidden(`The reseller ${reseller.user} may not ${what}: it lacks the alpha feature.`);
  }
}

/** A reseller may not suspend, remove or change the reseller status of its own account. */
export function refuseOwnAccount(principal: Principal, user: string, what: string): void {
  if (resellerOf(principal)?.user === user) {
    throw forbidden(`A reseller may not ${what} its own account.`);
  }
}

/**
 * Checks that a reseller stays within its limits when `user` (null: a new account) takes the
 * given quota and bandwidth. Runs inside the transaction that makes the change, so two concurrent
 * calls cannot both take the last slot.
 */
export async function enforceResellerLimits(
  db: Db,
  resellerUser: string,
  change: { user: string | null; quota: Limit; bandwidth: Limit },
): Promise<void> {
  // Locking the reseller's row makes concurrent calls for the same reseller take turns.
  const reseller = await findAccountInScope(db, resellerUser, null, { lock: true });
  const limits = reseller?.reseller;
  if (!limits) return;
  const totals = await ownedTotals(db, resellerUser, change.user);
  const exceeded = (limit: string, param?: string) =>
    apiError('reseller_limit', { reseller: resellerUser, limit }, param);
  if (change.user === null && limits.limit !== null && totals.accounts >= limits.limit) {
    throw exceeded('account count');
  }
  for (const [name, limit, value, total] of [
    ['quota', limits.quota, change.quota, totals.quota],
    ['bandwidth', limits.bandwidth, change.bandwidth, totals.bandwidth],
  ] as const) {
    if (limit === null) continue;
    if (value === null || total + value > limit) throw exceeded(name, name);
  }
}

/** Under a reseller, checks that an account's changed limits keep the reseller within its own. */
export async function enforceLimitsOfChange(db: Db, principal: Principal, after: Account): Promise<void> {
  const reseller = resellerOf(principal);
  if (!reseller) return;
  await enforceResellerLimits(db, reseller.user, {
    user: after.user,
    quota: after.limits.quota,
    bandwidth: after.limits.bandwidth,
  });
}

/** Makes a change to an account's system, journalled so that a crash can be recovered. */
export type RunSystemSteps = (change: SystemChange) => Promise<void>;

/** How long a change waits for another server's change to the same account before giving up. */
const HELD_WAIT_MS = 60_000;

/** The changes this process is running steps for, by account: a change to one waits for it. */
const running = new WeakMap<Db, Map<string, Promise<void>>>();

/**
 * Runs `work` in a transaction, with the call's audit entry in the same commit as its effect. System
 * changes it asks for through `system` are done by the account's own server.
 *
 * Here, when they are the call's only ones, they run after the commit, so that no store lock is
 * held while they do: the commit holds every account the call wrote (pending_changes, with the row
 * as it was) until the steps end; then a second commit lets them go and records the call. When a
 * step fails the finished ones are undone, last first, and the old rows come back; a crash meanwhile
 * is repaired the same way at start. Any other change to a held account waits (AccountBusy).
 *
 * On another server of the fleet, they are kept open there and settled with the transaction
 * (CONTRACT §12); a call that changes another server's system runs its own steps inside the
 * transaction too. A conflict with another server's transaction is retried while no step has run.
 */
export async function changeState<T>(
  ctx: Context,
  work: (db: Db, system: RunSystemSteps) => Promise<T>,
): Promise<T> {
  const { journal, fleet, driver, store } = ctx.services;
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    const done: Step[] = [];
    const journalled: string[] = [];
    const transaction = randomUUID();
    const peers = new Set<string>();
    const local: { change: SystemChange; steps: Step[] }[] = [];
    let held: string[] = [];
    const runLocal = async ({ change, steps }: (typeof local)[number]) => {
      const { account } = change;
      await fleet.settleEarlierChanges(account.user);
      journalled.push(
        journal.begin({
          user: account.user,
          domain: account.domain,
          homedir: account.homedir,
          operation: steps[0]!.name,
          startedAt: new Date().toISOString(),
          domains: domainsOfChange(change),
        }),
      );
      await runSteps(steps, done);
    };
    const systemOn =
      (trx: Db): RunSystemSteps =>
      async (change) => {
        const server = change.account.server ?? fleet.self;
        if (server === fleet.self) {
          const steps = stepsFor(driver, change);
          if (steps.length > 0) local.push({ change, steps });
          return;
        }
        if (peers.size === 0) await fleet.beginRemote(trx, transaction);
        peers.add(server);
        await fleet.applyOn(server, transaction, change, ctx.principal);
      };
    let result: T;
    try {
      result = await store.db.transaction().execute(async (trx) => {
        trackWrites(trx);
        const value = await work(trx, systemOn(trx));
        if (local.length > 0 && peers.size === 0) {
          const users = local.map(({ change }) => change.account.user);
          held = await holdAccounts(trx, transaction, fleet.self, users);
        } else {
          for (const change of local) await runLocal(change);
          await ctx.recordSuccess(trx);
        }
        return value;
      });
    } catch (error) {
      await undo(ctx, done);
      for (const id of journalled) journal.end(id);
      await fleet.settleOn(peers, transaction, 'undo');
      if (error instanceof AccountBusy && journalled.length === 0 && peers.size === 0) {
        await waitForHeld(store.db, error, started);
        continue;
      }
      if (journalled.length > 0 || peers.size > 0 || attempt >= 5 || !isTransient(error)) throw error;
      continue;
    }
    if (held.length === 0) {
      for (const id of journalled) journal.end(id);
      await fleet.settleOn(peers, transaction, 'commit');
      return result;
    }
    return await holding(store.db, held, async () => {
      try {
        for (const change of local) await runLocal(change);
        await store.db.transaction().execute(async (trx) => {
          await releaseAccounts(trx, transaction);
          await ctx.recordSuccess(trx);
        });
      } catch (error) {
        await undo(ctx, done);
        try {
          await restoreAccounts(store.db, transaction);
        } catch (restoreError) {
          // The accounts stay held until start-up brings the old rows back and repairs the system
          // to match them from the journal.
          ctx.services.log.error({ err: restoreError }, 'could not restore the rows of a failed change');
          throw error;
        }
        for (const id of journalled) journal.end(id);
        throw error;
      }
      for (const id of journalled) journal.end(id);
      return result;
    });
  }
}

async function undo(ctx: Context, done: Step[]): Promise<void> {
  await undoSteps(done, (step, undoError) =>
    ctx.services.log.error({ err: undoError, step: step.name }, 'could not undo a provisioning step'),
  );
}

/** Runs `act` with the accounts marked as held by this process, for changes to them to wait on. */
async function holding<T>(db: Db, users: readonly string[], act: () => Promise<T>): Promise<T> {
  let ours = running.get(db);
  if (!ours) {
    ours = new Map();
    running.set(db, ours);
  }
  const { promise, resolve } = Promise.withResolvers<void>();
  for (const user of users) ours.set(user, promise);
  try {
    return await act();
  } finally {
    for (const user of users) if (ours.get(user) === promise) ours.delete(user);
    resolve();
  }
}

/**
 * Waits for the change that holds an account: until this process's own ends, or a little while for
 * another server's; one that holds it for over a minute answers node_unavailable.
 */
async function waitForHeld(db: Db, busy: AccountBusy, since: number): Promise<void> {
  const ours = running.get(db)?.get(busy.user);
  if (ours) return await ours;
  if (Date.now() - since > HELD_WAIT_MS) throw nodeUnavailable({ server: busy.server, user: busy.user });
  await sleep(20);
}

/**
 * A conflict with another server's concurrent transaction that a retry resolves: a serialisation
 * failure or deadlock, or two calls taking the same free dedicated address.
 */
function isTransient(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  if (code === '40001' || code === '40P01') return true;
  const column = uniqueViolation(error);
  return column === 'dedicated_ipv4' || column === 'dedicated_ipv6';
}

const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789!#%+-=_';

/** A password for callers that leave it out: 20 random characters, never returned. */
export function generatePassword(): string {
  let out = '';
  for (let i = 0; i < 20; i++) out += PASSWORD_ALPHABET[randomInt(PASSWORD_ALPHABET.length)];
  return out;
}

/**
 * A change of the objects of the account on whose holder's side the call is (its domains,
 * mailboxes, cron jobs…): `work` changes their rows, given the account (locked until the commit,
 * so the account's changes take turns on its limits) and its objects as they were; the system
 * change from those to the objects the rows now hold follows, with its undo.
 */
export async function changeObjects<T>(
  ctx: Context,
  work: (db: Db, account: Account, before: AccountObjects) => Promise<T>,
): Promise<T> {
  return await changeState(ctx, async (db, system) => {
    const account = await holderAccount(db, ctx.principal);
    const before = await objectsOf(db, account.user);
    const result = await work(db, account, before);
    await system({ kind: 'objects', account, before, objects: await objectsOf(db, account.user) });
    return result;
  });
}
