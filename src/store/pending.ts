// Changes whose system steps run after their first commit (CONTRACT §8). The transaction that makes
// a change notes every account it writes (its row and the rows of its objects) as it was before; at its commit each such account is
// held in pending_changes with that row. While held, no other change may touch the account (it
// waits: AccountBusy). The steps' success lets the hold go; their failure, or a crash before they
// end, puts the old rows back.
import { overlapsOf } from '../core/values.ts';
import { insertObjectRows } from './object-rows.ts';
import { type AccountRow, type Db, OBJECT_TABLES, type ObjectRows, type PackageRow } from './schema.ts';

/** Another change holds the account while its system steps run: wait for it, then try again. */
export class AccountBusy extends Error {
  readonly user: string;
  readonly server: string;

  constructor(user: string, server: string) {
    super(`the account ${user} is being changed on the server ${server}`);
    this.name = 'AccountBusy';
    this.user = user;
    this.server = server;
  }
}

/** An account as it was before: its row (null: it did not exist) and the rows of its objects. */
interface AccountImage {
  row: AccountRow | null;
  objects: ObjectRows;
}

/** What a transaction wrote, as it was before: accounts and a package. */
interface BeforeImages {
  accounts: Map<string, AccountImage>;
  package: PackageRow | null;
}

const tracked = new WeakMap<Db, BeforeImages>();

/** From now on, the rows `trx` writes are noted as they were before (see holdAccounts). */
export function trackWrites(trx: Db): void {
  tracked.set(trx, { accounts: new Map(), package: null });
}

/**
 * Notes an account as it is now, its row and its objects', before `db` writes either, when `db` is
 * tracked.
 */
export async function noteAccount(db: Db, user: string): Promise<void> {
  const images = tracked.get(db);
  if (!images || images.accounts.has(user)) return;
  const row = await db.selectFrom('accounts').selectAll().where('user', '=', user).executeTakeFirst();
  images.accounts.set(user, { row: row ?? null, objects: await objectRowsOf(db, user) });
}

/** The rows of the account's objects, by table. */
async function objectRowsOf(db: Db, user: string): Promise<ObjectRows> {
  const rows: Partial<ObjectRows> = {};
  for (const table of OBJECT_TABLES)
    rows[table] = await db.selectFrom(table).selectAll().where('user', '=', user).execute();
  return rows as ObjectRows;
}

/** Notes a package's row as it is now, before `db` writes it, when `db` is tracked. */
export async function notePackage(db: Db, name: string): Promise<void> {
  const images = tracked.get(db);
  if (!images || images.package) return;
  images.package =
    (await db.selectFrom('packages').selectAll().where('name', '=', name).executeTakeFirst()) ?? null;
}

/** Refuses (AccountBusy) when a change holds any of the accounts. */
export async function refuseHeld(db: Db, users: readonly string[]): Promise<void> {
  for (let i = 0; i < users.length; i += CHUNK) {
    const held = await db
      .selectFrom('pending_changes')
      .select(['user', 'server'])
      .where('user', 'in', users.slice(i, i + CHUNK))
      .limit(1)
      .executeTakeFirst();
    if (held) throw new AccountBusy(held.user, held.server);
  }
}

/** Rows or names per statement: well within every store's limit on parameters. */
const CHUNK = 500;

/**
 * Refuses (AccountBusy) when a change holds an account whose domain is `domain` or overlaps it: a
 * removal still running, whose domain is not free until it ends.
 */
export async function refuseHeldDomain(db: Db, domain: string): Promise<void> {
  const { atOrAbove, under } = overlapsOf(domain);
  const held = await db
    .selectFrom('pending_changes')
    .select(['user', 'server'])
    .where((eb) => eb.or([eb('domain', 'in', atOrAbove), eb('domain', 'like', under)]))
    .limit(1)
    .executeTakeFirst();
  if (held) throw new AccountBusy(held.user, held.server);
  // The account's other domains are not free either: their rows come back if the change fails.
  const others = await db
    .selectFrom('pending_changes')
    .select(['user', 'server', 'objects'])
    .where('objects', 'is not', null)
    .execute();
  for (const row of others) {
    const domains = (JSON.parse(row.objects as string) as Partial<ObjectRows>).domains ?? [];
    if (domains.some((d) => atOrAbove.includes(d.domain) || d.domain.endsWith(under.slice(1))))
      throw new AccountBusy(row.user, row.server);
  }
}

/**
 * Holds every account `trx` wrote (and `alsoUsers`, whose rows it did not) for the change `txn`
 * run by `server`; returns the users held.
 */
export async function holdAccounts(
  trx: Db,
  txn: string,
  server: string,
  alsoUsers: readonly string[],
): Promise<string[]> {
  for (const user of alsoUsers) await noteAccount(trx, user);
  const images = tracked.get(trx);
  if (!images) throw new Error('holdAccounts: the transaction was not tracked');
  tracked.delete(trx);
  const now = Date.now();
  const packageImage = images.package ? JSON.stringify(images.package) : null;
  const rows = [];
  for (const [user, { row: before, objects }] of images.accounts) {
    const domain =
      before?.domain ??
      (await trx.selectFrom('accounts').select('domain').where('user', '=', user).executeTakeFirst())?.domain;
    if (domain === undefined) continue; // made and removed again in one call: nothing to hold
    rows.push({
      user,
      txn,
      server,
      domain,
      before: before ? JSON.stringify(before) : null,
      objects: JSON.stringify(objects),
      package: packageImage,
      created_ms: now,
    });
  }
  for (let i = 0; i < rows.length; i += CHUNK)
    await trx
      .insertInto('pending_changes')
      .values(rows.slice(i, i + CHUNK))
      .execute();
  return rows.map((row) => row.user);
}

/** The change's steps are done: its accounts are free again. */
export async function releaseAccounts(db: Db, txn: string): Promise<void> {
  await db.deleteFrom('pending_changes').where('txn', '=', txn).execute();
}

/** The change's steps failed or never ended: its rows go back to what they were, in one commit. */
export async function restoreAccounts(db: Db, txn: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const held = await trx.selectFrom('pending_changes').selectAll().where('txn', '=', txn).execute();
    // Every row goes first, then the old ones come back: a domain may have passed between them.
    for (const row of held) {
      await trx.deleteFrom('accounts').where('user', '=', row.user).execute();
      if (row.objects !== null)
        for (const table of OBJECT_TABLES) await trx.deleteFrom(table).where('user', '=', row.user).execute();
    }
    for (const row of held) {
      if (row.before !== null)
        await trx
          .insertInto('accounts')
          .values(JSON.parse(row.before) as AccountRow)
          .execute();
      const objects = row.objects === null ? null : (JSON.parse(row.objects) as ObjectRows);
      for (const table of objects ? OBJECT_TABLES : []) {
        // A change held from before a kind of object was kept has no rows of it.
        await insertObjectRows(trx, table, objects![table] ?? []);
      }
    }
    const pkg = held.find((row) => row.package !== null)?.package;
    if (pkg) {
      const { name, ...rest } = JSON.parse(pkg) as PackageRow;
      await trx.updateTable('packages').set(rest).where('name', '=', name).execute();
    }
    await releaseAccounts(trx, txn);
  });
}

/** The changes `server` was running, each by its id. */
export async function heldBy(db: Db, server: string): Promise<{ txn: string; users: string[] }[]> {
  const rows = await db
    .selectFrom('pending_changes')
    .select(['txn', 'user'])
    .where('server', '=', server)
    .orderBy('created_ms')
    .execute();
  const byTxn = new Map<string, string[]>();
  for (const { txn, user } of rows) byTxn.set(txn, [...(byTxn.get(txn) ?? []), user]);
  return [...byTxn].map(([txn, users]) => ({ txn, users }));
}

/** The rows of the accounts held by changes, as they were before the changes. */
async function heldRows(db: Db): Promise<AccountRow[]> {
  const rows = await db
    .selectFrom('pending_changes')
    .select('before')
    .where('before', 'is not', null)
    .execute();
  return rows.map((row) => JSON.parse(row.before as string) as AccountRow);
}

/**
 * The rows of held accounts, as they were before, that `owner` owned: a reseller's limits count
 * them until the changes end (a failure brings them back).
 */
export async function heldRowsOwnedBy(db: Db, owner: string): Promise<AccountRow[]> {
  return (await heldRows(db)).filter((row) => row.owner === owner && row.user !== owner);
}

/** The dedicated addresses the rows of held accounts had before: taken until the changes end. */
export async function heldAddresses(db: Db, family: 4 | 6): Promise<Map<string, string>> {
  const column = family === 4 ? 'dedicated_ipv4' : 'dedicated_ipv6';
  const out = new Map<string, string>();
  for (const row of await heldRows(db)) {
    const address = row[column];
    if (address) out.set(address, row.owner);
  }
  return out;
}
