// Calls from this server to the others of the fleet (CONTRACT §12): the paths the others answer on
// (routes.ts), how long each call may take, the fleet's shared secret that signs them (client.ts),
// and a question about a server's system, answered here when that server is this one.
import { randomBytes } from 'node:crypto';
import { nodeUnavailable } from '../core/errors.ts';
import type { Db } from '../store/schema.ts';
import { findServer, type Server } from '../store/servers.ts';
import { getSetting } from '../store/settings.ts';
import { postToPeer, signedHeaders, Unreachable } from './client.ts';
import type { FleetDeps } from './context.ts';

export const FLEET_PATHS = {
  steps: '/fleet/v1/steps',
  settle: '/fleet/v1/settle',
  nameTaken: '/fleet/v1/name-taken',
  move: '/fleet/v1/move',
  receive: '/fleet/v1/receive',
  export: '/fleet/v1/export',
  files: '/fleet/v1/files',
  backups: '/fleet/v1/backups',
  backupArchive: '/fleet/v1/backup-archive',
  backupParts: '/fleet/v1/backup-parts',
} as const;

/** Steps may reload services: they get this long to answer. */
export const STEPS_TIMEOUT_MS = 120_000;
/** A move answers when the account's files have been copied: it may be silent that long. */
export const MOVE_TIMEOUT_MS = 60 * 60_000;
/** A settle message is bookkeeping: a short wait, then the other server finds out for itself. */
export const SETTLE_TIMEOUT_MS = 5_000;

const SECRET_SETTING = 'fleet_secret';

/** The account is not on this server: the caller's view of the fleet is out of date. */
export class NotHere extends Error {}

/** The answer of another server: its HTTP status and its JSON body. */
export interface PeerReply {
  status: number;
  answer: Record<string, unknown>;
}

export class PeerCalls {
  readonly self: string;
  readonly #deps: Pick<FleetDeps, 'store' | 'driver' | 'log'>;
  #secret: string | null = null;

  constructor(deps: FleetDeps) {
    this.#deps = deps;
    this.self = deps.config.nodeName;
  }

  get #db(): Db {
    return this.#deps.store.db;
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

  /** The server of that name as it registered; unavailable (for `user`'s call) when it never did. */
  async peer(name: string, user?: string): Promise<Server> {
    const peer = await findServer(this.#db, name);
    if (!peer) throw nodeUnavailable({ server: name, user });
    return peer;
  }

  /** Signs a request as this server's for `peer` alone, with the fleet's secret. */
  async signer(peer: string): Promise<(path: string, body: string) => Record<string, string>> {
    const secret = await this.secret();
    if (secret === null)
      throw new Unreachable('the fleet has no secret yet: no server of it has started', false);
    return (path, body) => signedHeaders(secret, { from: this.self, to: peer }, path, body);
  }

  async post(peer: Server, path: string, body: object, timeoutMs: number): Promise<PeerReply> {
    return postToPeer(peer, path, body, await this.signer(peer.name), timeoutMs);
  }

  /** Whether `server`'s system already has a user or group of that name. */
  async nameTaken(server: string, user: string): Promise<boolean> {
    if (server === this.self) return this.#deps.driver.nameTaken(user);
    const peer = await this.peer(server, user);
    try {
      const { status, answer } = await this.post(peer, FLEET_PATHS.nameTaken, { user }, SETTLE_TIMEOUT_MS);
      if (status === 200 && typeof answer.taken === 'boolean') return answer.taken;
      this.#deps.log.error({ server, status, answer }, 'a server of the fleet refused a question');
    } catch (error) {
      this.#deps.log.warn({ server, err: error }, 'a server of the fleet could not be reached');
    }
    throw nodeUnavailable({ server, user });
  }
}
