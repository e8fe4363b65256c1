// What several operations share: scope, rights, reseller limits, and changing state with system
// steps so that a failure leaves nothing behind.
import { randomInt, randomUUID } from 'node:crypto';
import { ApiError, apiError, catalogue } from '../errors.ts';
import { type SystemChange, stepsFor } from '../provision/changes.ts';
import { runSteps, type Step, undoSteps } from '../provision/driver.ts';
import { type Account, findAccountInScope, ownedTotals, type Scope } from '../store/accounts.ts';
import { uniqueViolation } from '../store/errors.ts';
import type { Db } from '../store/schema.ts';
import type { Limit } from '../values.ts';
import type { Caller, Context } from './operation.ts';

export function scopeOf(caller: Caller): Scope {
  return caller.reseller ? { owner: caller.reseller.user } : null;
}

/**
 * The named account in the caller's scope; outside it, the account does not exist. Inside
 * changeState the row stays locked until the commit.
 */
export async function targetAccount(db: Db, caller: Caller, user: string): Promise<Account> {
  const account = await findAccountInScope(db, user, scopeOf(caller), { lock: db.isTransaction });
  if (!account) throw apiError('account_not_found', { user }, 'user');
  return account;
}

export function forbidden(reason: string) {
  return apiError('forbidden', { reason });
}

/** setupreseller, terminatereseller and createacct reseller=on under a reseller need `alpha`. */
export function requireAlpha(caller: Caller, what: string): void {
  if (caller.reseller && !caller.reseller.reseller?.alpha) {
    throw forbidden(`The reseller ${caller.reseller.user} may not ${what}: it lacks the alpha feature.`);
  }
}

/** A reseller may not suspend, remove or change the reseller status of its own account. */
export function refuseOwnAccount(caller: Caller, user: string, what: string): void {
  if (caller.reseller && caller.reseller.user === user) {
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
export async function enforceLimitsOfChange(db: Db, caller: Caller, after: Account): Promise<void> {
  if (!caller.reseller) return;
  await enforceResellerLimits(db, caller.reseller.user, {
    user: after.user,
    quota: after.limits.quota,
    bandwidth: after.limits.bandwidth,
  });
}

/** Makes a change to an account's system, journalled so that a crash can be recovered. */
export type RunSystemSteps = (change: SystemChange) => Promise<void>;

/** How long a caller is told to wait after node_unavailable. */
const NODE_RETRY_SECONDS = 30;

export function nodeUnavailable(args: { server: string; user?: string }): ApiError {
  return new ApiError('node_unavailable', catalogue.node_unavailable.info(args), undefined, {
    'retry-after': String(NODE_RETRY_SECONDS),
  });
}

/**
 * Runs `work` in one transaction, with the call's audit entry in the same commit. System changes it
 * makes through `system` are done by the account's own server: here, journalled first and undone,
 * last first, when anything after them fails (a later step, a store write, the commit); on another
 * server of the fleet, kept open there and settled with the transaction (CONTRACT §12). A conflict
 * with another server's transaction is retried while no system step has run.
 */
export async function changeState<T>(
  ctx: Context,
  work: (db: Db, system: RunSystemSteps) => Promise<T>,
): Promise<T> {
  const { journal, fleet, driver } = ctx.services;
  for (let attempt = 1; ; attempt++) {
    const done: Step[] = [];
    const journalled: string[] = [];
    const transaction = randomUUID();
    const peers = new Set<string>();
    const systemOn =
      (trx: Db): RunSystemSteps =>
      async (change) => {
        const { account } = change;
        const server = account.server ?? fleet.self;
        if (server !== fleet.self) {
          if (peers.size === 0) await fleet.beginRemote(trx, transaction);
          peers.add(server);
          await fleet.applyOn(server, transaction, change);
          return;
        }
        const steps = stepsFor(driver, change);
        if (steps.length === 0) return;
        await fleet.settleEarlierChanges(account.user);
        journalled.push(
          journal.begin({
            user: account.user,
            domain: account.domain,
            homedir: account.homedir,
            operation: steps[0]!.name,
            startedAt: new Date().toISOString(),
          }),
        );
        await runSteps(steps, done);
      };
    try {
      const result = await ctx.services.store.db.transaction().execute(async (trx) => {
        const value = await work(trx, systemOn(trx));
        await ctx.recordSuccess(trx);
        return value;
      });
      for (const id of journalled) journal.end(id);
      await fleet.settleOn(peers, transaction, 'commit');
      return result;
    } catch (error) {
      await undoSteps(done, (step, undoError) =>
        ctx.services.log.error({ err: undoError, step: step.name }, 'could not undo a provisioning step'),
      );
      for (const id of journalled) journal.end(id);
      await fleet.settleOn(peers, transaction, 'undo');
      if (journalled.length > 0 || peers.size > 0 || attempt >= 5 || !isTransient(error)) throw error;
    }
  }
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
