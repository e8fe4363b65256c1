// The holder's MariaDB databases on the linux driver (CONTRACT §14), against a real MariaDB of the
// test's own whose socket is in the throwaway system root: users at localhost with all privileges
// on their granted databases and nothing else, grants escaped so that `_` is no wildcard, the
// connection limit, suspension locking the users and ending their connections, a failing step
// undone, berth doctor finding drift both ways, a move's dumps loaded with users and hashes
// intact, and removal dropping everything with the account's prefix.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import { inspect } from '../../src/operations/maintenance.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { objectsOf } from '../../src/store/objects.ts';
import { callForHolder, createAccount, forSuite } from '../helpers.ts';
import { linuxWithMariadb } from './mariadb.ts';

const SECRET = 'Database-Secret-7';
/** What doctor says once where the homes are not on btrfs (a test's system root). */
const OUTSIDE = 'MariaDB: the databases of ';

describe('databases on the linux driver, against a real MariaDB', () => {
  const h = forSuite(linuxWithMariadb);
  const call = (user: string, op: string, params: Record<string, string> = {}) =>
    callForHolder(h, user, op, params);
  const as = (user: string, password = SECRET, database?: string) => ({ user, password, database });
  /** Whether `user` may log in with `password` (and use `database`). */
  const canLogIn = (user: string, password = SECRET, database?: string) => {
    try {
      h.mariadb.sql('SELECT 1', as(user, password, database));
      return true;
    } catch {
      return false;
    }
  };

  it('makes the database and the user at localhost, with every privilege on it and nothing else', async () => {
    await createAccount(h, 'alice', { domain: 'alice.example', sql: '5' });
    await createAccount(h, 'bob', { domain: 'bob.example', sql: '5' });
    await call('alice', 'add_database', { name: 'wp' });
    await call('alice', 'add_database_user', { name: 'wp', password: SECRET });
    await call('alice', 'grant_database', { database: 'wp', dbuser: 'wp' });
    assert.equal(h.mariadb.sql("SELECT Host FROM mysql.user WHERE User = 'alice_wp'"), 'localhost\n');
    h.mariadb.sql(
      'CREATE TABLE posts (id INT PRIMARY KEY, title TEXT); INSERT INTO posts VALUES (1, "hello")',
      as('alice_wp', SECRET, 'alice_wp'),
    );
    assert.equal(h.mariadb.sql('SELECT title FROM posts', as('alice_wp', SECRET, 'alice_wp')), 'hello\n');
    // Its own database alone; no privilege on *.*.
    assert.equal(h.mariadb.sql('SHOW DATABASES', as('alice_wp')), 'alice_wp\ninformation_schema\n');
    const grants = h.mariadb.sql("SHOW GRANTS FOR 'alice_wp'@'localhost'");
    assert.match(grants, /GRANT USAGE ON \*\.\* TO `alice_wp`@`localhost`/);
    assert.match(grants, /WITH MAX_USER_CONNECTIONS 10/);
    assert.match(grants, /GRANT ALL PRIVILEGES ON `alice\\+_wp`\.\*/);
    assert.equal(grants.trim().split('\n').length, 2, grants);
    // The password reached MariaDB as its hash alone, on standard input: never on a command line.
    for (const argv of h.commands) assert.ok(!argv.join(' ').includes(SECRET));
    for (const input of h.inputs) assert.ok(!input.includes(SECRET));
  });

  it('the grant is escaped: alice_wp covers neither alice1wp nor a neighbour’s aliceXwp', async () => {
    h.mariadb.sql('CREATE DATABASE alice1wp; CREATE DATABASE aliceXwp; CREATE TABLE alice1wp.t (x INT)');
    assert.equal(canLogIn('alice_wp', SECRET, 'alice1wp'), false);
    assert.equal(canLogIn('alice_wp', SECRET, 'aliceXwp'), false);
    assert.throws(() => h.mariadb.sql('SELECT * FROM alice1wp.t', as('alice_wp')), /denied/);
    h.mariadb.sql('DROP DATABASE alice1wp; DROP DATABASE aliceXwp');
  });

  it("bob's user reaches none of alice's databases, and sees only his own", async () => {
    await call('bob', 'add_database', { name: 'shop' });
    await call('bob', 'add_database_user', { name: 'shop', password: SECRET });
    await call('bob', 'grant_database', { database: 'shop', dbuser: 'shop' });
    assert.equal(canLogIn('bob_shop', SECRET, 'alice_wp'), false);
    assert.equal(h.mariadb.sql('SHOW DATABASES', as('bob_shop')), 'bob_shop\ninformation_schema\n');
    assert.equal(canLogIn('alice_wp', 'wrong-password-1'), false);
  });

  it('a new password takes at once; a revoke takes the database away', async () => {
    await call('alice', 'change_database_password', { name: 'wp', password: 'Another-Secret-8' });
    assert.equal(canLogIn('alice_wp', SECRET), false);
    assert.equal(canLogIn('alice_wp', 'Another-Secret-8', 'alice_wp'), true);
    await call('alice', 'change_database_password', { name: 'wp', password: SECRET });
    await call('alice', 'revoke_database', { database: 'wp', dbuser: 'wp' });
    assert.equal(canLogIn('alice_wp', SECRET, 'alice_wp'), false);
    await call('alice', 'grant_database', { database: 'wp', dbuser: 'wp' });
    assert.equal(canLogIn('alice_wp', SECRET, 'alice_wp'), true);
  });

  it('suspension locks the users and ends their connections; a failed suspension unlocks them again', async () => {
    h.failAt.step = 'end processes';
    assert.equal((await h.call('suspendacct', { user: 'alice', reason: 'unpaid' })).statusCode, 500);
    h.failAt.step = null;
    assert.equal(canLogIn('alice_wp'), true);
    // A connection open when the account is suspended is ended.
    const open = spawn(
      '/usr/bin/mariadb',
      ['--no-defaults', `--socket=${h.mariadb.socket}`, '--user=alice_wp'],
      {
        env: { ...process.env, MYSQL_PWD: SECRET },
        stdio: ['pipe', 'ignore', 'ignore'],
      },
    );
    const ended = new Promise((resolve) => open.on('exit', resolve));
    open.stdin.write('SELECT 1;\n');
    const connections = () =>
      h.mariadb.sql("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'alice_wp'").trim();
    for (let i = 0; i < 50 && connections() === '0'; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(connections(), '1');
    assert.equal((await h.call('suspendacct', { user: 'alice', reason: 'unpaid' })).statusCode, 200);
    assert.equal(connections(), '0');
    open.stdin.end('SELECT 2;\n');
    await ended;
    assert.equal(canLogIn('alice_wp'), false);
    const drift = (d: string[]) => d.filter((l) => l.includes('database') && !l.startsWith('MariaDB: '));
    assert.deepEqual(await inspect(h.services).then(drift), []);
    assert.equal((await h.call('unsuspendacct', { user: 'alice' })).statusCode, 200);
    assert.equal(canLogIn('alice_wp', SECRET, 'alice_wp'), true);
  });

  it('berth doctor finds a stored database or user missing, and one with the prefix the store lacks', async () => {
    h.mariadb.sql(
      "DROP USER 'bob_shop'@'localhost'; CREATE DATABASE alice_stray; CREATE USER 'alice_ghost'@'localhost'",
    );
    const found = await inspect(h.services);
    for (const line of [
      'bob: database user bob_shop is missing in MariaDB',
      'alice: database alice_stray in MariaDB is not in the store',
      'alice: database user alice_ghost in MariaDB is not in the store',
    ])
      assert.ok(found.includes(line), found.join('\n'));
    // Recovery makes the stored user again, as stored.
    const bob = (await findAccount(h.services.store.db, 'bob'))!;
    await h.services.driver.reconcile(bob, await objectsOf(h.services.store.db, 'bob'));
    assert.equal(canLogIn('bob_shop', SECRET, 'bob_shop'), true);
    // A user the store lacks goes (it holds no data); a database the store lacks stays, reported.
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    await h.services.driver.reconcile(alice, await objectsOf(h.services.store.db, 'alice'));
    assert.equal(h.mariadb.sql("SELECT User FROM mysql.user WHERE User = 'alice_ghost'"), '');
    assert.equal(h.mariadb.sql("SHOW DATABASES LIKE 'alice\\_stray'"), 'alice_stray\n');
  });

  it('berth doctor says once that database data is outside the disk quota where homes are not on btrfs', async () => {
    const said = (await inspect(h.services)).filter((line) => line.startsWith(OUTSIDE));
    assert.equal(said.length, 1, said.join('\n'));
    assert.match(
      said[0]!,
      /^MariaDB: the databases of 2 account\(s\) are in \/.+, outside every disk quota: only homes on btrfs/,
    );
  });

  it('berth doctor warns while MariaDB has symbolic links on (DATA DIRECTORY would leave the quota)', async () => {
    // The test's MariaDB runs as Debian's does by default, with symbolic links on.
    assert.deepEqual(
      (await inspect(h.services)).filter((line) => line.includes('symbolic links')),
      [
        "MariaDB: symbolic links are on (have_symlink YES): an account's CREATE TABLE … DATA DIRECTORY puts the table's files wherever MariaDB may write, outside every quota: set symbolic-links = 0 (deploy/mariadb-berth.cnf)",
      ],
    );
  });

  it('berth doctor warns when one account could hold half of MariaDB connections or more', async () => {
    const warning = (found: string[]) => found.filter((line) => line.startsWith('MariaDB: one account'));
    assert.deepEqual(warning(await inspect(h.services)), [], 'the defaults fit Debian’s 151');
    h.mariadb.sql('SET GLOBAL max_connections = 60');
    try {
      assert.deepEqual(warning(await inspect(h.services)), [
        'MariaDB: one account may hold 50 of its 60 connections (database_users × database_user_connections): raise max_connections to 100 or more, or lower those',
      ]);
    } finally {
      h.mariadb.sql('SET GLOBAL max_connections = 151');
    }
  });

  it('a move carries each database as a consistent dump, and its users with their hashes', async () => {
    const { driver } = h.services;
    const account = (await findAccount(h.services.store.db, 'alice'))!;
    const objects = await objectsOf(h.services.store.db, 'alice');
    const exported = (await driver.exportAccount(account))!;
    assert.match(exported.databases!.alice_wp!, /INSERT INTO `posts` VALUES/);
    // As on a new server: nothing of alice's in MariaDB, then the account made from the export.
    h.mariadb.sql("DROP DATABASE alice_wp; DROP USER 'alice_wp'@'localhost'");
    const steps = driver
      .receiveAccount(
        account,
        { ...exported, files: async () => Readable.from([Buffer.alloc(1024)]) },
        objects,
      )
      .filter((step) => /database/.test(step.name));
    for (const step of steps) await step.run();
    assert.equal(h.mariadb.sql('SELECT title FROM posts', as('alice_wp', SECRET, 'alice_wp')), 'hello\n');
  });

  it('remove_database drops its data; removeacct drops every database and user with the prefix', async () => {
    await call('bob', 'remove_database', { name: 'shop' });
    assert.equal(h.mariadb.sql("SHOW DATABASES LIKE 'bob\\_%'"), '');
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    assert.equal(h.mariadb.sql("SHOW DATABASES LIKE 'alice\\_%'"), '');
    assert.equal(h.mariadb.sql("SELECT User FROM mysql.user WHERE User LIKE 'alice\\_%'"), '');
    assert.equal(canLogIn('alice_wp'), false);
  });
});
