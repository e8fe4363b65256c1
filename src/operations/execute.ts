// The one way an operation runs, whatever called it: identify the principal, refuse what the
// server or the principal may not do, parse the parameters, run, and append the audit entry.
import { ApiError, apiError, invalid, missing, nodeUnavailable } from '../core/errors.ts';
import { auditableApiUser, PACKAGE_NAME } from '../core/values.ts';
import { recordEvent } from '../events/events.ts';
import { runVetoHooks } from '../events/vetoes.ts';
import { StepFailed, StepRefused } from '../provision/driver.ts';
import type { Services } from '../services.ts';
import { type AuditEntry, appendAudit } from '../store/audit.ts';
import { AccountBusy } from '../store/pending.ts';
import type { Db } from '../store/schema.ts';
import { actingForHolder } from './common.ts';
import { once, parseIdempotencyKey, requestHash } from './idempotency.ts';
import {
  type Context,
  type NotText,
  type Operation,
  parseParams,
  type RawParams,
  type Result,
} from './operation.ts';
import {
  actorName,
  audienceOf,
  auditedPrincipal,
  holderAccountOf,
  idempotencyOwner,
  type Principal,
  resellerOf,
} from './principal.ts';

export interface Call {
  operation: Operation;
  params: RawParams;
  address: string;
  /** The API user the call claims to be, for the audit entry of a call refused before it is known. */
  claimedUser: string;
  /** The account a holder's call claims (a valid user name), for the same; it wins over claimedUser. */
  claimedHolder?: string;
  /**
   * Authenticates the caller and works out who it is and for whom it acts. A failure is a
   * rejection, never a throw: a read's chain starts with this call.
   */
  identify(): Promise<Principal>;
  /** The Idempotency-Key the caller sent, if any. */
  idempotencyKey?: string;
  /**
   * Of a call for an account's holder (/api/account/<op>/, CONTRACT §14), the values of `user`:
   * the account whose holder the administrator or reseller acts for, which must be in its scope.
   * Undefined for any other call.
   */
  actingFor?: readonly (string | NotText)[];
}

/** Turns anything thrown into the error the caller sees; internals go to the log only. */
export function toApiError(error: unknown, services: Services, operation: string): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof AccountBusy) return nodeUnavailable({ server: error.server, user: error.user });
  if (error instanceof StepFailed && error.cause instanceof StepRefused)
    return invalid(error.cause.param, error.cause.message);
  if (error instanceof StepFailed) {
    services.metrics.stepFailure(error.step);
    services.log.error({ err: error.cause, operation, step: error.step }, 'provisioning step failed');
    return apiError('provisioning_failed', {
      step: error.step,
      ...(error.leaves !== undefined && { leaves: error.leaves }),
    });
  }
  services.log.error({ err: error, operation }, 'operation failed');
  return apiError('internal', {});
}

/**
 * The account or package a call names, as the audit log shows it: valid text, or `?`. A call on an
 * account holder's side is about that account.
 */
function auditTarget(params: RawParams, principal: Principal | undefined): string | null {
  const holder = principal && holderAccountOf(principal);
  if (holder) return holder.user;
  const value = params.get('user')?.[0] ?? params.get('name')?.[0];
  if (typeof value !== 'string' || value === '') return null;
  return PACKAGE_NAME.test(value) ? value : '?';
}

/** Appends the audit entry of a refused call; a failure to write it is logged, not answered. */
export async function appendRefusal(services: Services, entry: AuditEntry): Promise<void> {
  await appendAudit(services.store.db, entry).catch((error: unknown) => {
    services.log.error({ err: error, entry }, 'could not append the audit entry');
  });
}

/** 403 unless the operation serves the principal's audience (Operation.audiences). */
function refuseOutsideAudience(operation: Operation, principal: Principal): void {
  const audience = audienceOf(principal);
  if (operation.audiences.includes(audience)) return;
  const name = operation.name;
  const reason =
    audience === 'reseller' && operation.audiences.includes('admin')
      ? `Only the administrator may call ${name}.`
      : audience === 'holder'
        ? `${name} is not an operation of an account holder.`
        : `${name} is an operation of an account holder: call it for an account, acting for its holder.`;
  throw apiError('forbidden', { reason });
}

/** The audit entry of a call: by whom it was made (once known), on what, and how it ended. */
function auditEntry(
  services: Services,
  call: Call,
  principal: Principal | undefined,
  status: number,
  code: string | null,
): AuditEntry {
  return {
    at: services.now().toISOString(),
    api_user: principal
      ? actorName(principal)
      : call.claimedHolder !== undefined
        ? `customer:${call.claimedHolder}`
        : auditableApiUser(call.claimedUser),
    reseller: (principal && resellerOf(principal)?.user) ?? null,
    ...(principal ? auditedPrincipal(principal) : { principal: null, via: null, acting_for: null }),
    address: call.address,
    operation: call.operation.name,
    target: auditTarget(call.params, principal),
    status,
    code,
  };
}

/** A read is not audited: it has no success to record. */
const readsRecordNothing = async (): Promise<void> => {};

/**
 * Runs the call for the principal it is from and for, once refused what it may not do (thrown, not
 * rejected). Not an async function: one around the operation's promise costs every call a wait
 * for that promise and another for its own.
 */
function act(
  services: Services,
  call: Call,
  who: Principal,
  recordSuccess: Context['recordSuccess'],
): Promise<Result> {
  const { operation } = call;
  if (operation.changesState && services.config.demo) throw apiError('demo_server', {});
  refuseOutsideAudience(operation, who);
  const input = parseParams(operation.params, call.params, services.config);
  const ctx = { services, principal: who, db: services.store.db, recordSuccess };
  if (!operation.vetoable) return operation.run(ctx, input);
  return runVetoHooks(services, operation, who, call.params).then(() => operation.run(ctx, input));
}

/** The account a call for a holder names: its one `user`, refused when missing or given twice. */
function namedHolder(values: readonly (string | NotText)[]): string {
  if (values.length > 1) throw invalid('user', 'it is given more than once');
  const [user] = values;
  if (typeof user !== 'string' || user === '') throw missing('user');
  return user;
}

export function execute(services: Services, call: Call): Promise<Result> {
  return call.operation.changesState ? executeChange(services, call) : executeRead(services, call);
}

/**
 * A read: nothing to audit, nothing to replay. Chained, not an async function: every read would
 * pay for an async function's saved frame and its awaits, more than a read's own work.
 */
function executeRead(services: Services, call: Call): Promise<Result> {
  const { operation } = call;
  const ran = call
    .identify()
    .then((identified) =>
      call.actingFor === undefined
        ? act(services, call, identified, readsRecordNothing)
        : actingForHolder(services.store.db, identified, namedHolder(call.actingFor)).then((who) =>
            act(services, call, who, readsRecordNothing),
          ),
    )
    .then(undefined, (error: unknown) => {
      throw toApiError(error, services, operation.name);
    });
  if (!operation.event) return ran;
  return ran.then((result) => {
    services.dispatcher.poke();
    return result;
  });
}

async function executeChange(services: Services, call: Call): Promise<Result> {
  const { operation } = call;
  let principal: Principal | undefined;
  let status = 200;
  let code: string | null = null;
  let recorded = false;
  const recordSuccess = async (db: Db) => {
    await appendAudit(db, auditEntry(services, call, principal, status, code));
    if (principal) await recordEvent(db, services, operation, principal, call.params);
    recorded = true;
  };
  try {
    const identified = await call.identify();
    principal = identified;
    const who =
      call.actingFor === undefined
        ? identified
        : await actingForHolder(services.store.db, identified, namedHolder(call.actingFor));
    principal = who;
    if (call.idempotencyKey === undefined || operation.secretAnswer) {
      const result = await act(services, call, who, recordSuccess);
      if (operation.event) services.dispatcher.poke();
      return result;
    }
    const key = parseIdempotencyKey(call.idempotencyKey);
    const hash = requestHash(operation, who, call.params);
    const outcome = await once(services, idempotencyOwner(who), key, hash, async () => {
      try {
        return { result: await act(services, call, who, recordSuccess) };
      } catch (error) {
        return { error: toApiError(error, services, operation.name) };
      }
    });
    if (outcome.error) throw outcome.error;
    if (operation.event) services.dispatcher.poke();
    if (outcome.replayed) {
      status = outcome.result.status ?? 200;
      code = 'replayed';
    }
    return outcome.result;
  } catch (error) {
    // Whatever the transaction recorded was rolled back with it.
    recorded = false;
    const failure = toApiError(error, services, operation.name);
    status = failure.status;
    code = failure.code;
    throw failure;
  } finally {
    // A success was recorded in its own transaction; a refusal (or a success that changed
    // nothing through changeState) is recorded here.
    if (!recorded) await appendRefusal(services, auditEntry(services, call, principal, status, code));
  }
}
