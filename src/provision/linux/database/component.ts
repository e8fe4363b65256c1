// The database component: the account holder's MariaDB databases and database users (CONTRACT
// §14). Every database and user of an account is named `<user>_<suffix>`; users exist at
// localhost only, with a password given to MariaDB as its hash (the store's), all privileges on
// the databases granted to them (escaped: `_` and `%` are wildcards in a GRANT) and nothing
// else, and MAX_USER_CONNECTIONS from the configuration. While the account is suspended its users
// are locked (ACCOUNT LOCK) and their connections ended; removing it drops every database and user
// with its prefix. A removed database's data goes in the change's last step, which cannot be undone
// (docs/linux-driver.md, Databases). Where the homes are on btrfs, each database's files are in the
// account's disk quota (storage.ts).
import { existsSync } from 'node:fs';
import type { Account } from '../../../store/accounts.ts';
import type { DatabaseUser } from '../../../store/databases.ts';
import { type AccountObjects, noObjects } from '../../../store/objects.ts';
import type { Component, LinuxContext, LinuxStep } from '../context.ts';
import {
  createStatements,
  dumpDatabase,
  grantedDatabase,
  identifier,
  literal,
  loadDump,
  localUser,
  runSql,
} from './sql.ts';
import { databaseStorage } from './storage.ts';

/** What MariaDB has of an account. */
interface Found {
  databases: string[];
  /** Each user's name, and whether it is locked. */
  users: Map<string, boolean>;
}

const like = (user: string) => `'${user}\\_%'`;

export interface DatabaseComponent extends Component {
  /** Each database of the account as a consistent dump, by name (`berth move-account`). */
  dumps(user: string): Promise<Record<string, string>>;
}

export function databaseComponent(ctx: LinuxContext): DatabaseComponent {
  const connections = ctx.config.databaseUserConnections;
  const databasesOf = (objects?: AccountObjects) => objects?.databases ?? [];
  const usersOf = (objects?: AccountObjects) => objects?.database_users ?? [];
  const hasAny = (objects?: AccountObjects) => databasesOf(objects).length + usersOf(objects).length > 0;
  /** Whether MariaDB's socket is there: a server (or test root) without it has no databases. */
  const available = () => existsSync(ctx.path(ctx.linux.mariadbSocket));
  const storage = databaseStorage(ctx);
  /** `to`'s databases that `from` lacks. */
  const added = (from: AccountObjects, to: AccountObjects) =>
    databasesOf(to)
      .filter((d) => !databasesOf(from).some((f) => f.name === d.name))
      .map((d) => d.name);
  /** Runs converge's statements, each new database's place in the quota made first. */
  async function apply(account: Account, from: AccountObjects, to: AccountObjects, dropDatabases: boolean) {
    const fresh = await storage.place(account, added(from, to));
    try {
      await runSql(ctx, converge(account, from, to, dropDatabases));
    } catch (error) {
      // A failed step is not undone: each database whose place it made (MariaDB had none of that
      // name) goes again, so that no empty database is left that the store does not have.
      await runSql(
        ctx,
        fresh.map((name) => `DROP DATABASE IF EXISTS ${identifier(name)}`),
      ).catch(() => {});
      await storage.clear(account, fresh).catch(() => {});
      throw error;
    }
    if (dropDatabases) await storage.clear(account, added(to, from));
  }

  /** A user as it should be: its password's hash, its limit, locked or not, its grants alone. */
  function userStatements(dbUser: DatabaseUser, locked: boolean): string[] {
    const who = localUser(dbUser.name);
    return [
      `CREATE USER IF NOT EXISTS ${who} IDENTIFIED BY PASSWORD ${literal(dbUser.passwordHash)}`,
      `ALTER USER ${who} IDENTIFIED BY PASSWORD ${literal(dbUser.passwordHash)} WITH MAX_USER_CONNECTIONS ${connections} ACCOUNT ${locked ? 'LOCK' : 'UNLOCK'}`,
      `REVOKE ALL PRIVILEGES, GRANT OPTION FROM ${who}`,
      ...dbUser.grants.map((db) => `GRANT ALL PRIVILEGES ON ${grantedDatabase(db)}.* TO ${who}`),
    ];
  }

  /** Ends every connection of these users (KILL USER: each of theirs, whatever it runs). */
  const killStatements = (names: readonly string[]) => names.map((name) => `KILL USER ${localUser(name)}`);

  /**
   * The statements that take MariaDB from `from` to `to`: `to`'s databases made, its users that
   * are new or changed made as `to` has them, `from`'s users that `to` lacks dropped, and (only
   * when `dropDatabases`: the undo of a change that made them, still empty) `from`'s databases
   * that `to` lacks dropped.
   */
  function converge(account: Account, from: AccountObjects, to: AccountObjects, dropDatabases: boolean) {
    const locked = account.suspension !== null;
    const toUsers = new Set(usersOf(to).map((u) => u.name));
    const toDatabases = new Set(databasesOf(to).map((d) => d.name));
    const same = (a: DatabaseUser, b: DatabaseUser | undefined) =>
      b !== undefined && a.passwordHash === b.passwordHash && a.grants.join(',') === b.grants.join(',');
    const gone = usersOf(from)
      .filter((u) => !toUsers.has(u.name))
      .map((u) => u.name);
    return [
      ...added(from, to).flatMap(createStatements),
      ...usersOf(to)
        .filter(
          (u) =>
            !same(
              u,
              usersOf(from).find((f) => f.name === u.name),
            ),
        )
        .flatMap((u) => userStatements(u, locked)),
      ...killStatements(gone),
      ...gone.map((name) => `DROP USER IF EXISTS ${localUser(name)}`),
      ...(dropDatabases
        ? databasesOf(from)
            .filter((d) => !toDatabases.has(d.name))
            .map((d) => `DROP DATABASE IF EXISTS ${identifier(d.name)}`)
        : []),
    ];
  }

  const none = noObjects();

  /** Everything MariaDB has with the account's prefix. */
  async function found(user?: string): Promise<Found> {
    // Every name with a `_` when no account is named: each then belongs to the account before it.
    const pattern = user === undefined ? "'%\\_%'" : like(user);
    const databases = (
      await runSql(ctx, [
        `SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ${pattern}`,
      ])
    ).map(([name]) => name!);
    const rows = await runSql(ctx, [
      `SELECT User, IFNULL(JSON_VALUE(Priv, '$.account_locked'), 0) FROM mysql.global_priv WHERE User LIKE ${pattern}`,
    ]);
    return { databases, users: new Map(rows.map(([name, locked]) => [name!, locked === '1'])) };
  }

  /** Drops every database and user with the account's prefix, its users' connections ended first. */
  async function dropEverything(user: string): Promise<void> {
    const { databases, users } = await found(user);
    const names = [...users.keys()];
    await runSql(ctx, [
      ...names.map((name) => `ALTER USER ${localUser(name)} ACCOUNT LOCK`),
      ...killStatements(names),
      ...names.map((name) => `DROP USER IF EXISTS ${localUser(name)}`),
      ...databases.map((name) => `DROP DATABASE IF EXISTS ${identifier(name)}`),
    ]);
  }

  /** Locks or unlocks the account's users; a lock ends their connections too. */
  const lockStep = (objects: AccountObjects | undefined, lock: boolean): LinuxStep[] => {
    const names = usersOf(objects).map((u) => u.name);
    if (names.length === 0) return [];
    const statements = (locking: boolean) => [
      ...names.map((name) => `ALTER USER ${localUser(name)} ACCOUNT ${locking ? 'LOCK' : 'UNLOCK'}`),
      ...(locking ? killStatements(names) : []),
    ];
    return [
      ctx.step(
        lock ? 'lock database users' : 'unlock database users',
        async () => void (await runSql(ctx, statements(lock))),
        async () => void (await runSql(ctx, statements(!lock))),
      ),
    ];
  };

  return {
    name: 'database',

    async dumps(user) {
      if (!available()) return {};
      const dumps: Record<string, string> = {};
      for (const name of (await found(user)).databases) dumps[name] = await dumpDatabase(ctx, name);
      return dumps;
    },

    create(account, origin, objects) {
      if (!hasAny(objects)) return [];
      const steps: LinuxStep[] = [
        ctx.step(
          'databases and their users',
          () => apply(account, none, objects!, false),
          () => apply(account, objects!, none, true),
        ),
      ];
      // An account arriving from another server: each database as it was dumped there.
      const dumps = 'moved' in origin ? (origin.moved.databases ?? {}) : {};
      for (const { name } of databasesOf(objects))
        if (dumps[name] !== undefined)
          steps.push(ctx.step(`database ${name}`, () => loadDump(ctx, name, dumps[name]!)));
      return steps;
    },

    suspend: (_account, objects) => lockStep(objects, true),
    unsuspend: (_account, objects) => lockStep(objects, false),
    remove: (_account, objects) => lockStep(objects, true),

    changeObjects(account, before, after) {
      if (converge(account, before, after, false).length === 0) return [];
      return [
        ctx.step(
          'databases and their users',
          () => apply(account, before, after, false),
          () => apply(account, after, before, true),
        ),
      ];
    },

    async forgetObjects(account, before, after) {
      const gone = added(after, before);
      await runSql(
        ctx,
        gone.map((name) => `DROP DATABASE IF EXISTS ${identifier(name)}`),
      );
      await storage.clear(account, gone);
    },

    async forget(account, objects) {
      if (!available() && !hasAny(objects)) return;
      await dropEverything(account.user);
      await storage.removeAll(account);
    },

    async reconcile(account, objects) {
      if (!available() && !hasAny(objects)) return;
      const { databases, users } = await found(account.user);
      const have: AccountObjects = {
        ...none,
        databases: databases.map((name) => ({ name, createdAt: new Date(0) })),
        // What MariaDB has is taken as stale, so that every stored user is made again as stored.
        database_users: [...users.keys()].map((name) => ({
          name,
          passwordHash: '',
          grants: ['?'],
          createdAt: new Date(0),
        })),
      };
      // Each stored database's place in the quota as it should be: the subvolume back in the
      // account's qgroup, a missing link made again (a directory of the data directory, or a link
      // that leads elsewhere, holds data: left, for doctor to name).
      await storage.place(
        account,
        databasesOf(objects).map((d) => d.name),
      );
      await apply(account, have, objects ?? none, false);
    },

    async inspect(accounts, _sites, objects) {
      const stored = accounts.filter((a) => hasAny(objects.get(a.user)));
      if (!available()) {
        return stored.map(
          (a) =>
            `${a.user}: has databases or database users, but MariaDB does not answer at ${ctx.linux.mariadbSocket}`,
        );
      }
      const differences: string[] = [];
      // One account's users may hold at most half of MariaDB's connections, so that no account
      // takes every site's database from the others.
      const [[max] = []] = await runSql(ctx, ['SELECT @@max_connections']);
      const perAccount = ctx.config.databaseUsers * ctx.config.databaseUserConnections;
      if (perAccount * 2 > Number(max))
        differences.push(
          `MariaDB: one account may hold ${perAccount} of its ${max} connections (database_users × database_user_connections): raise max_connections to ${perAccount * 2} or more, or lower those`,
        );
      // With symbolic links on, CREATE TABLE … DATA DIRECTORY (which needs no privilege beyond
      // CREATE) puts a table's files wherever MariaDB's user may write: /tmp, another account's
      // databases' directory. Off, MariaDB ignores it, and still follows a linked database directory.
      const [[symlinks] = []] = await runSql(ctx, ['SELECT @@have_symlink']);
      if (symlinks !== 'DISABLED')
        differences.push(
          `MariaDB: symbolic links are on (have_symlink ${symlinks}): an account's CREATE TABLE … DATA DIRECTORY puts the table's files wherever MariaDB may write, outside every quota: set symbolic-links = 0 (deploy/mariadb-berth.cnf)`,
        );
      const everything = await found();
      for (const account of accounts) {
        const { user } = account;
        const mine = (name: string) => name.startsWith(`${user}_`);
        const databases = everything.databases.filter(mine);
        const users = new Map([...everything.users].filter(([name]) => mine(name)));
        const own = objects.get(user);
        const stored = databasesOf(own).map((d) => d.name);
        for (const { name } of databasesOf(own))
          if (!databases.includes(name)) differences.push(`${user}: database ${name} is missing in MariaDB`);
        for (const name of databases)
          if (!databasesOf(own).some((d) => d.name === name))
            differences.push(`${user}: database ${name} in MariaDB is not in the store`);
        for (const dbUser of usersOf(own)) {
          const locked = users.get(dbUser.name);
          if (locked === undefined)
            differences.push(`${user}: database user ${dbUser.name} is missing in MariaDB`);
          else if (locked !== (account.suspension !== null))
            differences.push(
              `${user}: database user ${dbUser.name} is ${locked ? 'locked' : 'not locked'} while the account is ${account.suspension ? 'suspended' : 'active'}`,
            );
        }
        for (const name of users.keys())
          if (!usersOf(own).some((u) => u.name === name))
            differences.push(`${user}: database user ${name} in MariaDB is not in the store`);
        differences.push(...(await storage.inspect(account, stored, new Set(databases))));
      }
      for (const path of storage.strays(accounts))
        differences.push(
          `${path}: the databases' directory of no account here (remove it when its account is gone)`,
        );
      // Once for the server: where the homes are not on btrfs, no quota counts a database's files.
      const outside = accounts.filter(
        (a) => databasesOf(objects.get(a.user)).length > 0 && !storage.counted(a),
      );
      if (outside.length > 0)
        differences.push(
          `MariaDB: the databases of ${outside.length} account(s) are in ${await storage.datadir()}, outside every disk quota: only homes on btrfs hold their account's databases in its quota (docs/linux-driver.md, Databases)`,
        );
      return differences;
    },
  };
}
