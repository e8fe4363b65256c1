// Idempotent retries: a state-changing call sent with an Idempotency-Key header acts once; the same
// key from the same principal (an API account, an account holder) within 24 hours gets the stored answer back without acting again,
// and the same key with other parameters is refused.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ApiError, invalid } from '../core/errors.ts';
import type { Services } from '../services.ts';
import {
  claimKey,
  findAnswer,
  forgetAnswersBefore,
  releaseKey,
  storeAnswer,
} from '../store/idempotency-keys.ts';
import type { Operation, RawParams, Result } from './operation.ts';
import { holderAccountOf, type Principal, resellerOf } from './principal.ts';

export const KEY_HEADER = 'Idempotency-Key';
const KEPT_MS = 24 * 3600_000;
/** A claim older than this whose call never answered (the server died) may be taken over. */
const ABANDONED_MS = 60_000;

export function parseIdempotencyKey(raw: string): string {
  if (!/^[\x21-\x7e]{1,255}$/.test(raw)) {
    throw invalid(KEY_HEADER, 'a key is 1 to 255 visible ASCII characters');
  }
  return raw;
}

/**
 * What makes two calls the same call: the operation, the reseller, the account holder it is for
 * (when it is on a holder's side), the declared parameters.
 */
export function requestHash(operation: Operation, principal: Principal, params: RawParams): string {
  const declared = Object.keys(operation.params)
    .sort()
    .map((name) => [name, params.get(name) ?? []]);
  const holder = holderAccountOf(principal);
  const request = [operation.name, resellerOf(principal)?.user ?? null, declared];
  if (holder) request.push(holder.user);
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}

export type Outcome = { result: Result; error?: undefined } | { error: ApiError; result?: undefined };

function stored(outcome: Outcome): { status: number; body: string } {
  if (outcome.error) {
    const { error } = outcome;
    return {
      status: error.status,
      body: JSON.stringify({ data: error.data, info: error.message, status: error.status }),
    };
  }
  const { result } = outcome;
  return { status: 200, body: JSON.stringify({ data: result.data, info: result.info, status: 200 }) };
}

/**
 * Runs `act` once per key: the first call claims the key, acts and stores its answer (not a 5xx,
 * which a retry may try again); a call with a stored answer gets it back, marked `replayed`.
 */
export async function once(
  services: Services,
  /** Whose keys: idempotencyOwner of the principal. */
  owner: string,
  key: string,
  hash: string,
  act: () => Promise<Outcome>,
): Promise<Outcome & { replayed?: boolean }> {
  const { db } = services.store;
  const started = Date.now();
  for (;;) {
    const now = Date.now();
    const answer = await findAnswer(db, owner, key);
    if (
      answer &&
      (answer.created_ms < now - KEPT_MS || (answer.status === 0 && answer.created_ms < now - ABANDONED_MS))
    ) {
      await releaseKey(db, owner, key);
      continue;
    }
    if (answer) {
      if (answer.request_hash !== hash)
        throw invalid(KEY_HEADER, 'it was sent with other parameters within the last 24 hours');
      if (answer.status !== 0) {
        return {
          replayed: true,
          result: { data: null, info: '', body: Buffer.from(answer.body), status: answer.status },
        };
      }
      // The first call with this key is still running: wait for its answer.
      if (now - started > 2 * ABANDONED_MS)
        throw invalid(KEY_HEADER, 'a call with this key is still running');
      await sleep(25);
      continue;
    }
    if (!(await claimKey(db, owner, key, hash, now))) continue;
    await forgetAnswersBefore(db, now - KEPT_MS);
    let outcome: Outcome;
    try {
      outcome = await act();
    } catch (error) {
      await releaseKey(db, owner, key);
      throw error;
    }
    const answer2 = stored(outcome);
    if (answer2.status >= 500) await releaseKey(db, owner, key);
    else await storeAnswer(db, owner, key, answer2.status, answer2.body);
    return outcome;
  }
}
