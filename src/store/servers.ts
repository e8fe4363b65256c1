// The servers of a fleet sharing this store (CONTRACT §12): each registers when it starts and
// beats every HEARTBEAT_MS; one not heard from for DOWN_AFTER_MS is down.
import type { Db } from './schema.ts';

export const HEARTBEAT_MS = 10_000;
export const DOWN_AFTER_MS = 30_000;

export interface Server {
  name: string;
  advertiseUrl: string;
  driver: string;
  draining: boolean;
  startedAt: Date;
  heartbeatAt: Date;
}

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
export async function registerServer(
  db: Db,
  server: { name: string; advertiseUrl: string; driver: string },
  now: Date,
): Promise<void> {
  const at = now.toISOString();
  await db
    .insertInto('servers')
    .values({
      name: server.name,
      advertise_url: server.advertiseUrl,
      driver: server.driver,
      draining: 0,
      started_at: at,
      heartbeat_at: at,
    })
    .onConflict((conflict) =>
      conflict.column('name').doUpdateSet({
        advertise_url: server.advertiseUrl,
        driver: server.driver,
        started_at: at,
        heartbeat_at: at,
      }),
    )
    .execute();
}

export async function heartbeat(db: Db, name: string, now: Date): Promise<void> {
  await db.updateTable('servers').set({ heartbeat_at: now.toISOString() }).where('name', '=', name).execute();
}

/** Every server, by name, with its state and how many accounts it holds. */
export async function listServers(db: Db, now: number): Promise<ListedServer[]> {
  const rows = await db.selectFrom('servers').selectAll().orderBy('name').execute();
  const counts = await db
    .selectFrom('accounts')
    .select(['server', (eb) => eb.fn.countAll<number | string>().as('n')])
    .groupBy('server')
    .execute();
  const held = new Map(counts.map((row) => [row.server, Number(row.n)]));
  return rows.map((row) => {
    const server: Server = {
      name: row.name,
      advertiseUrl: row.advertise_url,
      driver: row.driver,
      draining: Number(row.draining) === 1,
      startedAt: new Date(row.started_at),
      heartbeatAt: new Date(row.heartbeat_at),
    };
    return { ...server, state: stateOf(server, now), accounts: held.get(row.name) ?? 0 };
  });
}

export async function isDraining(db: Db, name: string): Promise<boolean> {
  const row = await db.selectFrom('servers').select('draining').where('name', '=', name).executeTakeFirst();
  return Number(row?.draining ?? 0) === 1;
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
  for (let i = 0; i < users.length; i += 500) {
    await db
      .updateTable('accounts')
      .set({ server })
      .where('user', 'in', users.slice(i, i + 500))
      .where('server', 'is', null)
      .execute();
  }
}
