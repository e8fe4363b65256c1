// The servers of a fleet sharing this store (CONTRACT §12): each registers when it starts and
// beats every HEARTBEAT_MS; one not heard from for DOWN_AFTER_MS is down.
import { SqliteAdapter, sql } from 'kysely';
import type { Db, ServerTable } from './schema.ts';

export const HEARTBEAT_MS = 10_000;
export const DOWN_AFTER_MS = 30_000;

/** What an account placed on a server takes from that server's configuration. */
export interface HostingProfile {
  sharedIpv4: string;
  sharedIpv6: string;
  shell: string;
  homeBase: string;
  nameservers: string[];
  ipPool: { ipv4: string[]; ipv6: string[]; resellerShare: number };
  /** The server's host name (absent from a profile written before it was kept). */
  hostName?: string;
}

export interface Server {
  name: string;
  advertiseUrl: string;
  driver: string;
  draining: boolean;
  startedAt: Date;
  heartbeatAt: Date;
  /** SHA-256 fingerprint of the certificate at advertiseUrl (the others pin it); null without TLS. */
  tlsFingerprint: string | null;
  weight: number;
  profile: HostingProfile | null;
}

/** What a server says of itself when it registers. */
export type ServerRegistration = Pick<
  Server,
  'name' | 'advertiseUrl' | 'driver' | 'tlsFingerprint' | 'weight'
> & { profile: HostingProfile };

export type ServerState = 'up' | 'down' | 'draining';

export interface ListedServer extends Server {
  state: ServerState;
  accounts: number;
}

export function stateOf(server: Server, now: number): ServerState {
  if (now - server.heartbeatAt.getTime() > DOWN_AFTER_MS) return 'down';
  return server.draining ? 'draining' : 'up';
}

/** Records this server as started now, keeping whether an administrator drained it. */
export async function registerServer(db: Db, server: ServerRegistration, now: Date): Promise<void> {
  const at = now.toISOString();
  const described = {
    advertise_url: server.advertiseUrl,
    driver: server.driver,
    tls_fingerprint: server.tlsFingerprint,
    weight: server.weight,
    profile: JSON.stringify(server.profile),
    started_at: at,
    heartbeat_at: at,
  };
  await db
    .insertInto('servers')
    .values({ name: server.name, draining: 0, ...described })
    .onConflict((conflict) => conflict.column('name').doUpdateSet(described))
    .execute();
}

function toServer(row: ServerTable): Server {
  const profile = JSON.parse(row.profile) as Partial<HostingProfile>;
  return {
    name: row.name,
    advertiseUrl: row.advertise_url,
    driver: row.driver,
    draining: Number(row.draining) === 1,
    startedAt: new Date(row.started_at),
    heartbeatAt: new Date(row.heartbeat_at),
    tlsFingerprint: row.tls_fingerprint,
    weight: Number(row.weight),
    profile: profile.homeBase === undefined ? null : (profile as HostingProfile),
  };
}

/**
 * The host names and name servers of every server of the fleet, as each wrote them into its
 * profile: none is a holder's to take, nor a name above or under one.
 */
export async function fleetServerNames(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('servers').select('profile').execute();
  return rows.flatMap((row) => {
    const profile = JSON.parse(row.profile) as Partial<HostingProfile>;
    return [...(profile.hostName ? [profile.hostName] : []), ...(profile.nameservers ?? [])];
  });
}

export async function findServer(db: Db, name: string): Promise<Server | undefined> {
  const row = await db.selectFrom('servers').selectAll().where('name', '=', name).executeTakeFirst();
  return row && toServer(row);
}

export async function heartbeat(db: Db, name: string, now: Date): Promise<void> {
  await db.updateTable('servers').set({ heartbeat_at: now.toISOString() }).where('name', '=', name).execute();
}

/** Every server, by name, with its state and how many accounts it holds. */
export async function listServers(db: Db, now: number): Promise<ListedServer[]> {
  const servers = await serversWithState(db, now);
  const held = await accountsHeld(db);
  return servers.map((server) => ({ ...server, accounts: held.get(server.name) ?? 0 }));
}

/** Every server, by name, with its state. */
export async function serversWithState(db: Db, now: number): Promise<(Server & { state: ServerState })[]> {
  const rows = await db.selectFrom('servers').selectAll().orderBy('name').execute();
  return rows.map((row) => {
    const server = toServer(row);
    return { ...server, state: stateOf(server, now) };
  });
}

/** How many accounts each server holds (by server name). */
export async function accountsHeld(db: Db): Promise<Map<string | null, number>> {
  const counts = await db
    .selectFrom('accounts')
    .select(['server', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('server')
    .execute();
  return new Map(counts.map((row) => [row.server, Number(row.n)]));
}

/** Drains (or undrains) a server; false when there is none of that name. */
export async function setDraining(db: Db, name: string, draining: boolean): Promise<boolean> {
  const result = await db
    .updateTable('servers')
    .set({ draining: draining ? 1 : 0 })
    .where('name', '=', name)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

/** The accounts no server holds yet (made before fleets), for the starting server to claim. */
export async function unplacedAccounts(db: Db): Promise<{ user: string }[]> {
  return db.selectFrom('accounts').select('user').where('server', 'is', null).execute();
}

export async function placeAccounts(db: Db, users: readonly string[], server: string): Promise<void> {
  if (users.length === 0) return;
  // One commit for them all: a store of 100,000 accounts made before fleets is claimed at once.
  // Rows are found by user: through the server index, which every unplaced row shares, each
  // statement would scan them all (server names are never empty).
  const unplaced = sql<boolean>`coalesce(${sql.ref('server')}, '') = ''`;
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < users.length; i += 500) {
      await trx
        .updateTable('accounts')
        .set({ server })
        .where('user', 'in', users.slice(i, i + 500))
        .where(unplaced)
        .execute();
    }
  });
}

/** The class of PostgreSQL advisory locks that fleet transactions hold (the key is their id). */
const FLEET_LOCK_CLASS = 0x62657275;

const onPostgres = (db: Db) => !(db.getExecutor().adapter instanceof SqliteAdapter);

/**
 * Holds, until `trx` ends, a lock named by the transaction's id: another server learns the
 * transaction has ended (committed or rolled back) when it can take the lock. SQLite has one
 * server and no fleet: nothing to hold.
 */
export async function holdTransactionLock(trx: Db, id: string): Promise<void> {
  if (!onPostgres(trx)) return;
  await sql`select pg_advisory_xact_lock(${FLEET_LOCK_CLASS}, hashtext(${id}))`.execute(trx);
}

/** Whether the transaction of that id has ended (its server committed, rolled back or died). */
export async function transactionEnded(db: Db, id: string): Promise<boolean> {
  if (!onPostgres(db)) return true;
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<{
      free: boolean;
    }>`select pg_try_advisory_xact_lock(${FLEET_LOCK_CLASS}, hashtext(${id})) as free`.execute(trx);
    return rows[0]?.free === true;
  });
}

/** Marks, in the transaction that commits it, a change other servers made on their systems. */
export async function markCommitted(db: Db, id: string, now: Date): Promise<void> {
  await db.insertInto('fleet_commits').values({ id, at: now.toISOString() }).execute();
}

export async function isCommitted(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('fleet_commits').select('id').where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}

/** Forgets the marks of transactions every server has long settled. */
export async function forgetCommitsBefore(db: Db, before: Date): Promise<void> {
  await db.deleteFrom('fleet_commits').where('at', '<', before.toISOString()).execute();
}
