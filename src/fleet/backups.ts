// Backups through any server of the fleet (CONTRACT §15): an account's snapshots are in the
// repositories of the servers that took them (the store's backup_holders), so listbackups,
// restoreacct, the holder's restores and the panel's download arriving elsewhere are asked of those
// servers, signed like every call between the fleet's servers. A restore is made by the account's
// own server; a snapshot a third server holds reaches it as that server's `parts` (what restic
// restored of it, as a tar stream), extracted there and copied in as any restore is.
// Both sides are here: the Backups a caller holds for another server, and what a server answers.
import type { Readable } from 'node:stream';
import { nodeUnavailable } from '../core/errors.ts';
import { type Backups, type HeldElsewhere, type RestoreRequest, StepRefused } from '../provision/driver.ts';
import { toAccount, toRow } from '../store/accounts.ts';
import { fromObjectRows, toObjectRows } from '../store/objects.ts';
import type { AccountRow } from '../store/schema.ts';
import { FLEET_PATHS, MOVE_TIMEOUT_MS, type PeerCalls, STEPS_TIMEOUT_MS } from './calls.ts';
import { streamFromPeer, Unreachable } from './client.ts';

/** The Backups of another server: each read and restore asked of it. */
export function remoteBackups(calls: PeerCalls, server: string): Backups {
  const ask = async (body: Record<string, unknown>, timeoutMs = STEPS_TIMEOUT_MS) => {
    const user = typeof body.user === 'string' ? body.user : undefined;
    const peer = await calls.peer(server, user);
    const { status, answer } = await reachable(server, user, () =>
      calls.post(peer, FLEET_PATHS.backups, body, timeoutMs),
    );
    if (status === 422 && typeof answer.param === 'string')
      throw new StepRefused(answer.param, String(answer.reason ?? 'refused'));
    if (status !== 200)
      throw new Error(`${server} answered ${status}: ${String(answer.error ?? 'no reason given')}`);
    return answer;
  };
  return {
    async backup() {
      throw new Error(`backups are made by the account's own server, ${server}, as jobs`);
    },
    async snapshots(user) {
      return (await ask({ action: 'snapshots', user })).snapshots as { id: string; time: string }[];
    },
    async size(snapshot) {
      return Number((await ask({ action: 'size', snapshot })).size);
    },
    async record(user, snapshot) {
      return String((await ask({ action: 'record', user, snapshot })).record);
    },
    async restore(account, objects, snapshot, request, held) {
      // A snapshot a third server holds: the account's server asks that one for its parts itself.
      await ask(
        {
          action: 'restore',
          user: account.user,
          account: toRow(account),
          objects: toObjectRows(account.user, objects),
          snapshot,
          request,
          ...(held && { holder: held.server }),
        },
        MOVE_TIMEOUT_MS,
      );
    },
    async parts(user, snapshot, request) {
      return partsOn(calls, server, user, snapshot, request);
    },
    async homeArchive(user, snapshot): Promise<Readable> {
      const peer = await calls.peer(server, user);
      const sign = await calls.signer(peer.name);
      return reachable(server, user, () =>
        streamFromPeer(peer, FLEET_PATHS.backupArchive, { user, snapshot }, sign, MOVE_TIMEOUT_MS),
      );
    },
    async applyRetention() {
      throw new Error(`retention is applied by ${server} itself`);
    },
    async check() {
      throw new Error(`${server} checks its repository itself`);
    },
  };
}

/** The parts (Backups.parts) of a snapshot `server`'s repository holds, streamed from it. */
export async function partsOn(
  calls: PeerCalls,
  server: string,
  user: string,
  snapshot: string,
  request: RestoreRequest,
): Promise<Readable> {
  const peer = await calls.peer(server, user);
  const sign = await calls.signer(peer.name);
  return reachable(server, user, () =>
    streamFromPeer(peer, FLEET_PATHS.backupParts, { user, snapshot, request }, sign, MOVE_TIMEOUT_MS),
  );
}

/** A server that cannot be reached holds the snapshots out of reach: 503 node_unavailable. */
async function reachable<T>(server: string, user: string | undefined, ask: () => Promise<T>): Promise<T> {
  try {
    return await ask();
  } catch (error) {
    if (error instanceof Unreachable) throw nodeUnavailable({ server, user });
    throw error;
  }
}

/** A restore request as another server sent it, or null when it is not one. */
export function restoreRequestOf(value: unknown): RestoreRequest | null {
  if (typeof value !== 'object' || value === null) return null;
  const { what, path, email, database } = value as Record<string, unknown>;
  if (what !== 'all' && what !== 'files' && what !== 'mail' && what !== 'databases') return null;
  if (
    path !== undefined &&
    !(
      Array.isArray(path) &&
      path.length > 0 &&
      path.every((c) => typeof c === 'string' && c !== '' && c !== '.' && c !== '..' && !c.includes('/'))
    )
  )
    return null;
  if (email !== undefined && (typeof email !== 'string' || !EMAIL.test(email))) return null;
  if (database !== undefined && (typeof database !== 'string' || !/^[A-Za-z0-9_]{1,64}$/.test(database)))
    return null;
  return {
    what,
    ...(path !== undefined && { path: path as string[] }),
    ...(email !== undefined && { email }),
    ...(database !== undefined && { database }),
  };
}

const USER = /^[a-z][a-z0-9]{0,15}$/;
/** An address whose two halves are names, never . or .. (they become directories of the home). */
const EMAIL = /^(?!\.\.?@)[a-z0-9._+-]{1,64}@(?!\.)[a-z0-9-]+(\.[a-z0-9-]+)*$/i;
const SNAPSHOT = /^[0-9a-f]{8,64}$/;
const SERVER = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** What this server answers another's question about its backups (routes.ts); 400 for nonsense. */
export async function answerBackups(
  backups: Backups,
  body: Record<string, unknown>,
  heldOn: (
    server: string,
    user: string,
    snapshot: string,
    request: RestoreRequest,
  ) => HeldElsewhere | undefined,
): Promise<{ status: number; answer: Record<string, unknown> }> {
  const { action, user, snapshot } = body;
  const bad = { status: 400, answer: { error: 'not a question about backups' } };
  if (user !== undefined && (typeof user !== 'string' || !USER.test(user))) return bad;
  if (snapshot !== undefined && (typeof snapshot !== 'string' || !SNAPSHOT.test(snapshot))) return bad;
  if (action === 'snapshots' && user)
    return { status: 200, answer: { snapshots: await backups.snapshots(user) } };
  if (action === 'size' && snapshot) return { status: 200, answer: { size: await backups.size(snapshot) } };
  if (action === 'record' && user && snapshot)
    return { status: 200, answer: { record: await backups.record(user, snapshot) } };
  if (action === 'restore' && user && snapshot && typeof body.account === 'object' && body.account !== null) {
    const account = toAccount(body.account as AccountRow);
    const objects = fromObjectRows(body.objects);
    const request = restoreRequestOf(body.request);
    const { holder } = body;
    if (account.user !== user || !objects || !request) return bad;
    if (holder !== undefined && (typeof holder !== 'string' || !SERVER.test(holder))) return bad;
    try {
      await backups.restore(
        account,
        objects,
        snapshot,
        request,
        holder === undefined ? undefined : heldOn(holder, user, snapshot, request),
      );
    } catch (error) {
      if (error instanceof StepRefused)
        return { status: 422, answer: { param: error.param, reason: error.message } };
      throw error;
    }
    return { status: 200, answer: { ok: true } };
  }
  return bad;
}
