// Backups through any server of the fleet (CONTRACT §15): an account's snapshots are in its own
// server's repository, so listbackups, restoreacct, the holder's restores and the panel's download
// arriving elsewhere are asked of that server, signed like every call between the fleet's servers.
// Both sides are here: the Backups a caller holds for another server, and what a server answers.
import type { Readable } from 'node:stream';
import { type Backups, type RestoreRequest, StepRefused } from '../provision/driver.ts';
import { toAccount, toRow } from '../store/accounts.ts';
import { fromObjectRows, toObjectRows } from '../store/objects.ts';
import type { AccountRow } from '../store/schema.ts';
import { FLEET_PATHS, MOVE_TIMEOUT_MS, type PeerCalls, STEPS_TIMEOUT_MS } from './calls.ts';
import { streamFromPeer } from './client.ts';

/** The Backups of another server: each read and restore asked of it. */
export function remoteBackups(calls: PeerCalls, server: string): Backups {
  const ask = async (body: Record<string, unknown>, timeoutMs = STEPS_TIMEOUT_MS) => {
    const peer = await calls.peer(server, typeof body.user === 'string' ? body.user : undefined);
    const { status, answer } = await calls.post(peer, FLEET_PATHS.backups, body, timeoutMs);
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
    async restore(account, objects, snapshot, request) {
      await ask(
        {
          action: 'restore',
          user: account.user,
          account: toRow(account),
          objects: toObjectRows(account.user, objects),
          snapshot,
          request,
        },
        MOVE_TIMEOUT_MS,
      );
    },
    async homeArchive(user, snapshot): Promise<Readable> {
      const peer = await calls.peer(server, user);
      return streamFromPeer(
        peer,
        FLEET_PATHS.backupArchive,
        { user, snapshot },
        await calls.signer(peer.name),
        MOVE_TIMEOUT_MS,
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

const USER = /^[a-z][a-z0-9]{0,15}$/;
const SNAPSHOT = /^[0-9a-f]{8,64}$/;

/** What this server answers another's question about its backups (routes.ts); 400 for nonsense. */
export async function answerBackups(
  backups: Backups,
  body: Record<string, unknown>,
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
    const request = body.request as RestoreRequest;
    if (account.user !== user || !objects || typeof request?.what !== 'string') return bad;
    try {
      await backups.restore(account, objects, snapshot, request);
    } catch (error) {
      if (error instanceof StepRefused)
        return { status: 422, answer: { param: error.param, reason: error.message } };
      throw error;
    }
    return { status: 200, answer: { ok: true } };
  }
  return bad;
}
