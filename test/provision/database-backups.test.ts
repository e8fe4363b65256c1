// The databases in backups on the linux driver (CONTRACT §15), with Debian's restic and a real
// MariaDB of the test's own: each backup holds a consistent dump of each of the account's
// databases and, in its record, the database users with their hashes and grants; a restore puts
// back exactly the snapshot's content of a database (a table dropped since comes back, one added
// since goes) and leaves the account's other databases alone; the holder restores only its own;
// a database removed since is refused, nothing changed; a removed account gets its databases,
// users and grants back. No dump is ever left where an account could read it.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runDueBackups } from '../../src/operations/backup-jobs.ts';
import { findJob } from '../../src/store/backup-jobs.ts';
import { callForHolder, createAccount, errorOf, forSuite } from '../helpers.ts';
import { get, HOLDER_PASSWORD, holderSession, type PanelHarness, postForm } from '../panel/pages.ts';
import { linuxWithMariadb } from './mariadb.ts';

const SECRET = 'Database-Secret-7';

describe('databases in backups on the linux driver, against a real MariaDB', () => {
  const h = forSuite(linuxWithMariadb);
  const call = (user: string, op: string, params: Record<string, string> = {}) =>
    callForHolder(h, user, op, params);
  const as = (user: string, database?: string, password = SECRET) => ({ user, password, database });
  const backup = async (user: string) => {
    const reply = await h.call('backupacct', { user });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    const job = (reply.body.data as { job: string }).job;
    assert.equal(await runDueBackups(h.services), 1);
    const done = await findJob(h.services.store.db, job);
    assert.equal(done?.state, 'done', done?.error ?? '');
    return done!.snapshot!;
  };
  /** The rows of a query, as the account's database user reads them. */
  const read = (sql: string, database = 'alice_wp') => h.mariadb.sql(sql, as('alice_wp', database));
  const refusal = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (error) {
      const { code, param, status } = error as { code: string; param?: string; status: number };
      return { status, code, param };
    }
    assert.fail('it was not refused');
  };
  let snapshot = '';

  it('a backup dumps each database of the account into the snapshot, and leaves no dump behind', async () => {
    await createAccount(h, 'alice', { domain: 'alice.example', sql: '5', password: HOLDER_PASSWORD });
    await createAccount(h, 'bob', { domain: 'bob.example', sql: '5' });
    for (const name of ['wp', 'shop']) await call('alice', 'add_database', { name });
    await call('alice', 'add_database_user', { name: 'wp', password: SECRET });
    for (const database of ['wp', 'shop']) await call('alice', 'grant_database', { database, dbuser: 'wp' });
    read('CREATE TABLE posts (id INT PRIMARY KEY, title TEXT); INSERT INTO posts VALUES (1, "hello")');
    read(
      'CREATE TABLE orders (id INT PRIMARY KEY); ' +
        'CREATE TRIGGER numbered BEFORE INSERT ON orders FOR EACH ROW SET NEW.id = NEW.id + 100; ' +
        'INSERT INTO orders VALUES (1)',
      'alice_shop',
    );
    snapshot = await backup('alice');
    // The dumps were files of root's in a directory of root's alone, gone once the snapshot was made.
    const staging = join(h.dataDir, 'backup-staging');
    assert.equal(statSync(staging).mode & 0o777, 0o700);
    assert.deepEqual(readdirSync(staging), []);
    // restic read them into the snapshot: the dump is there, the trigger with it.
    const { repository } = h.services.driver.backups as unknown as {
      repository: { dump(id: string, path: string): { output: NodeJS.ReadableStream; done: Promise<void> } };
    };
    const dumped = repository.dump(snapshot, join(staging, 'alice/databases/alice_shop.sql'));
    let text = '';
    for await (const chunk of dumped.output) text += chunk.toString();
    await dumped.done;
    assert.match(text, /CREATE TABLE `orders`/);
    assert.match(text, /TRIGGER.*numbered/);
    // No password on any command line.
    for (const argv of h.commands) assert.ok(!argv.join(' ').includes(SECRET));
  });

  it('restore_backup what=database puts back exactly the snapshot’s database, the others left alone', async () => {
    read('DROP TABLE posts; CREATE TABLE later (id INT)');
    read('INSERT INTO orders VALUES (2)', 'alice_shop');
    const reply = await call('alice', 'restore_backup', { snapshot, what: 'database', database: 'wp' });
    assert.match(String(reply.data), /Restored alice_wp of alice/);
    assert.equal(read('SELECT title FROM posts'), 'hello\n');
    assert.equal(read('SHOW TABLES'), 'posts\n');
    // The other database keeps what was added since; the user's grant on the restored one holds.
    assert.equal(read('SELECT id FROM orders ORDER BY id', 'alice_shop'), '101\n102\n');
    // The whole name works as well as the suffix.
    await call('alice', 'restore_backup', { snapshot, what: 'database', database: 'alice_shop' });
    assert.equal(read('SELECT id FROM orders', 'alice_shop'), '101\n');
  });

  it('the panel’s Backups page restores a database with its own button', async () => {
    read('DROP TABLE posts');
    const panel = h as unknown as PanelHarness;
    const alice = await holderSession(panel, 'alice');
    const page = await get(panel, '/backups', alice.cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /name="database" value="alice_wp">Restore database alice_wp</);
    const restored = await postForm(
      panel,
      '/backups/restore',
      { _csrf: alice.csrf, snapshot, database: 'alice_wp' },
      alice.cookie,
    );
    assert.equal(restored.status, 303);
    assert.equal(read('SELECT title FROM posts'), 'hello\n');
    // Another account's database is refused on the page, nothing changed.
    const refused = await postForm(
      panel,
      '/backups/restore',
      { _csrf: alice.csrf, snapshot, database: 'bob_x' },
      alice.cookie,
    );
    assert.equal(refused.status, 400);
    assert.equal(read('SELECT title FROM posts'), 'hello\n');
  });

  it('the holder restores only databases of its own, named as the database operations name them', async () => {
    const bobsSnapshot = await backup('bob');
    const cases: [string, Record<string, string>, { code: string; param: string }][] = [
      ['alice', { snapshot, what: 'database' }, { code: 'invalid_parameter', param: 'database' }],
      [
        'alice',
        { snapshot, what: 'database', database: '../wp' },
        { code: 'invalid_parameter', param: 'database' },
      ],
      [
        'alice',
        { snapshot, what: 'database', database: 'nope' },
        { code: 'object_not_found', param: 'database' },
      ],
      // bob's `alice_wp` is his own bob_alice_wp, which he does not have.
      [
        'bob',
        { snapshot: bobsSnapshot, what: 'database', database: 'alice_wp' },
        { code: 'object_not_found', param: 'database' },
      ],
      [
        'bob',
        { snapshot, what: 'database', database: 'wp' },
        { code: 'object_not_found', param: 'database' },
      ],
      [
        'alice',
        { snapshot, what: 'files', database: 'wp' },
        { code: 'invalid_parameter', param: 'database' },
      ],
    ];
    for (const [user, params, expected] of cases) {
      const got = await refusal(call(user, 'restore_backup', params));
      assert.deepEqual({ code: got.code, param: got.param }, expected, `${user} ${JSON.stringify(params)}`);
    }
    // bob added a database of his own since his snapshot: it holds none.
    await call('bob', 'add_database', { name: 'x' });
    const none = await refusal(
      call('bob', 'restore_backup', { snapshot: bobsSnapshot, what: 'database', database: 'x' }),
    );
    assert.deepEqual(
      { code: none.code, param: none.param },
      { code: 'invalid_parameter', param: 'database' },
    );
    assert.equal(read('SELECT title FROM posts'), 'hello\n');
  });

  it('a database removed since is refused with nothing changed; added again, it is restored', async () => {
    await call('alice', 'remove_database', { name: 'shop' });
    read('INSERT INTO posts VALUES (2, "since")');
    const reply = await h.call('restoreacct', { user: 'alice', snapshot, what: 'databases' });
    assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'what' });
    assert.match(String(reply.body.info ?? JSON.stringify(reply.body)), /alice_shop/);
    assert.equal(read('SELECT COUNT(*) FROM posts'), '2\n');
    const holder = await refusal(
      call('alice', 'restore_backup', { snapshot, what: 'database', database: 'shop' }),
    );
    assert.deepEqual(
      { code: holder.code, param: holder.param },
      { code: 'object_not_found', param: 'database' },
    );
    await call('alice', 'add_database', { name: 'shop' });
    await call('alice', 'grant_database', { database: 'shop', dbuser: 'wp' });
    const again = await h.call('restoreacct', { user: 'alice', snapshot, what: 'databases' });
    assert.equal(again.statusCode, 200, JSON.stringify(again.body));
    assert.equal(read('SELECT id FROM orders', 'alice_shop'), '101\n');
    assert.equal(read('SELECT COUNT(*) FROM posts'), '1\n');
  });

  it('a removed account is made again with its databases, users, hashes and grants', async () => {
    const grants = h.mariadb.sql("SHOW GRANTS FOR 'alice_wp'@'localhost'");
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    assert.equal(h.mariadb.sql("SELECT COUNT(*) FROM mysql.user WHERE User LIKE 'alice\\_%'"), '0\n');
    assert.equal(h.mariadb.sql("SHOW DATABASES LIKE 'alice\\_%'"), '');
    const reply = await h.call('restoreacct', { user: 'alice', snapshot });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    // The old password logs in; the data is the snapshot's; the grants are as they were.
    assert.equal(read('SELECT title FROM posts'), 'hello\n');
    assert.equal(read('SELECT id FROM orders', 'alice_shop'), '101\n');
    assert.equal(h.mariadb.sql("SHOW GRANTS FOR 'alice_wp'@'localhost'"), grants);
    assert.deepEqual(readdirSync(join(h.dataDir, 'restore-staging')), []);
    assert.equal(existsSync(join(h.dataDir, 'backup-staging/alice')), false);
  });
});
