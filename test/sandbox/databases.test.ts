// Databases in the sandbox (CONTRACT §14), with the real MariaDB client and PHP: a holder makes a
// database and a user through the customer API and grants it; a PHP page of its site reads a row
// over the local socket with mysqli; `mariadb -u <user> -p` works from the account. The sql limit
// stops one more. The hostile neighbour reaches none of it: it cannot log in, use or list the
// database, take a name inside the prefix, or be covered by a grant's `_` (escaped). Suspension
// locks the users out; removal leaves no database and no user.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxSsh,
  startSandbox,
} from '../process.ts';

const SECRET = 'Db-Secret-9876';
const passwordOf = (user: string) => `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`;

/** A PHP page that reads the first post with mysqli over the local socket (`localhost`). */
const page = (dbUser: string, database: string) => `<?php
mysqli_report(MYSQLI_REPORT_OFF);
$db = @new mysqli('localhost', '${dbUser}', '${SECRET}', '${database}');
if ($db->connect_errno) { echo 'refused: ', $db->connect_error; exit; }
$row = $db->query('SELECT title FROM posts WHERE id = 1');
echo $row ? 'title=' . $row->fetch_row()[0] : 'query refused: ' . $db->error;
`;

describe('databases, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const asHolder = async (user: string, operation: string, params: Record<string, string> = {}) =>
    sandboxHolderCall(sandbox, { user, password: passwordOf(user) }, operation, params);
  /** The MariaDB client, run as the account's system user, logging in as `dbUser`. */
  const client = (account: string, dbUser: string, sql: string, password = SECRET) =>
    running.asUser(
      account,
      `MYSQL_PWD='${password}' /usr/bin/mariadb --batch --skip-column-names -u ${dbUser} -e "${sql}"`,
    );
  const asRoot = async (sql: string) =>
    (await running.exec(['/usr/bin/mariadb', '--batch', '--skip-column-names', '-e', sql])).stdout;
  const site = (domain: string, path: string) =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  const writePage = async (user: string, name: string, content: string) => {
    const wrote = await running.asUser(
      user,
      `umask 022 && cat > /home/${user}/public_html/${name} <<'EOF'\n${content}\nEOF`,
    );
    assert.equal(wrote.code, 0, wrote.stderr);
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    for (const [user, sql] of [
      ['alice', '2'],
      ['bob', 'unlimited'],
      ['al', 'unlimited'],
      ['alxice', 'unlimited'],
    ] as const) {
      const made = await sandboxCall(sandbox, 'createacct', {
        user,
        domain: `${user}.example`,
        email: `${user}@example.org`,
        package: 'default',
        password: passwordOf(user),
        shell: '1',
        sql,
      });
      assert.equal(made.status, 200, made.info);
    }
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('a database and a user made through the API serve a PHP page over the socket, and the client', async () => {
    for (const [op, params] of [
      ['add_database', { name: 'wp' }],
      ['add_database_user', { name: 'wp', password: SECRET }],
      ['grant_database', { database: 'wp', dbuser: 'wp' }],
    ] as const) {
      const reply = await asHolder('alice', op, params);
      assert.equal(reply.status, 200, reply.body.info);
    }
    const made = await client(
      'alice',
      'alice_wp',
      "CREATE TABLE alice_wp.posts (id INT PRIMARY KEY, title TEXT); INSERT INTO alice_wp.posts VALUES (1, 'Hello from MariaDB')",
    );
    assert.equal(made.code, 0, made.stderr);
    assert.equal(
      (await client('alice', 'alice_wp', 'SELECT title FROM alice_wp.posts')).stdout,
      'Hello from MariaDB\n',
    );
    assert.equal(
      (await client('alice', 'alice_wp', 'SHOW DATABASES')).stdout,
      'alice_wp\ninformation_schema\n',
    );
    await writePage('alice', 'db.php', page('alice_wp', 'alice_wp'));
    const reply = site('alice.example', '/db.php');
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.body, 'title=Hello from MariaDB');
  });

  it("the account's jailed shell and its cron jobs reach MariaDB's socket, with the client in the jail", async () => {
    // The password in the client's option file in the jail's home, as a person keeps it.
    const cnf = await running.asUser(
      'alice',
      `umask 077 && printf '[client]\\npassword=${SECRET}\\n' > /home/alice/home/alice/.my.cnf`,
    );
    assert.equal(cnf.code, 0, cnf.stderr);
    const shell = sandboxSsh(sandbox, 'ssh', 'alice', passwordOf('alice'), [
      'mysql',
      '-u',
      'alice_wp',
      '--batch',
      '--skip-column-names',
      '-e',
      "'SELECT title FROM alice_wp.posts'",
    ]);
    assert.equal(shell.code, 0, shell.stderr);
    assert.equal(shell.stdout, 'Hello from MariaDB\n');
    // The socket's directory is bound read-only into the jail: nothing can be put beside it.
    assert.notEqual(
      sandboxSsh(sandbox, 'ssh', 'alice', passwordOf('alice'), ['touch', '/run/mysqld/x']).code,
      0,
    );
    const job = await asHolder('alice', 'add_cron_job', {
      schedule: '* * * * *',
      command:
        'mysql -u alice_wp --batch --skip-column-names -e "SELECT title FROM alice_wp.posts" > /public_html/cron-db.txt 2>&1',
    });
    assert.equal(job.status, 200, job.body.info);
    let ran = '';
    for (let i = 0; i < 80 && !ran.includes('\n'); i++) {
      await sleep(1000);
      ran = (await running.exec(['/usr/bin/cat', '/home/alice/public_html/cron-db.txt'])).stdout;
    }
    assert.equal(ran, 'Hello from MariaDB\n');
    await asHolder('alice', 'remove_cron_job', { id: (job.body.data as { id: string }).id });
  });

  it('the sql limit stops one more database', async () => {
    assert.equal((await asHolder('alice', 'add_database', { name: 'shop' })).status, 200);
    const third = await asHolder('alice', 'add_database', { name: 'third' });
    assert.equal(third.status, 400);
    assert.match(third.body.info, /sql/);
  });

  it("bob reaches none of alice's: no login, no use, no listing, no name in her prefix, no page of hers", async () => {
    assert.notEqual((await client('bob', 'alice_wp', 'SELECT 1', 'guess-Password-1')).code, 0);
    const taken = await asHolder('bob', 'add_database', { name: 'alice_x' });
    assert.equal(taken.status, 200, taken.body.info);
    assert.equal((taken.body.data as { name: string }).name, 'bob_alice_x');
    await asHolder('bob', 'add_database_user', { name: 'bob', password: SECRET });
    await asHolder('bob', 'grant_database', { database: 'alice_x', dbuser: 'bob' });
    assert.equal(
      (await client('bob', 'bob_bob', 'SHOW DATABASES')).stdout,
      'bob_alice_x\ninformation_schema\n',
    );
    const used = await client('bob', 'bob_bob', 'SELECT title FROM alice_wp.posts');
    assert.notEqual(used.code, 0);
    assert.match(used.stderr, /denied/);
    // His PHP with his user is refused her database; her page's password is hers to read alone.
    await writePage('bob', 'steal.php', page('bob_bob', 'alice_wp'));
    assert.match(site('bob.example', '/steal.php').body, /^refused: Access denied/);
    assert.notEqual((await running.asUser('bob', 'cat /home/alice/public_html/db.php')).code, 0);
    // alice's database is none of bob's to remove or grant.
    assert.equal((await asHolder('bob', 'remove_database', { name: 'alice_wp' })).status, 400);
    assert.equal((await client('alice', 'alice_wp', 'SELECT COUNT(*) FROM alice_wp.posts')).stdout, '1\n');
  });

  it('a grant covers its database alone: `_` is no wildcard, not even for a neighbour whose name fits', async () => {
    // al's grant on al_ice_wp, unescaped, would match alxice_wp: alxice's database.
    for (const [op, params] of [
      ['add_database', { name: 'ice_wp' }],
      ['add_database_user', { name: 'al', password: SECRET }],
      ['grant_database', { database: 'ice_wp', dbuser: 'al' }],
    ] as const)
      assert.equal((await asHolder('al', op, params)).status, 200);
    assert.equal((await asHolder('alxice', 'add_database', { name: 'wp' })).status, 200);
    assert.equal((await client('al', 'al_al', 'SHOW DATABASES')).stdout, 'al_ice_wp\ninformation_schema\n');
    const reached = await client('al', 'al_al', 'CREATE TABLE alxice_wp.t (x INT)');
    assert.notEqual(reached.code, 0);
    assert.match(reached.stderr, /denied/);
  });

  it("suspension locks the account's users out; unsuspension lets them in again", async () => {
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'unpaid' })).status,
      200,
    );
    const locked = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'bob',
      '--',
      '/bin/sh',
      '-c',
      `MYSQL_PWD='${SECRET}' /usr/bin/mariadb -u alice_wp -e 'SELECT 1'`,
    ]);
    assert.notEqual(locked.code, 0);
    assert.match(locked.stderr, /locked/);
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' })).status, 200);
    assert.equal((await client('alice', 'alice_wp', 'SELECT 1')).code, 0);
    assert.equal(site('alice.example', '/db.php').body, 'title=Hello from MariaDB');
  });

  it('removal leaves no database and no user of the account', async () => {
    assert.equal((await sandboxCall(sandbox, 'removeacct', { user: 'alice' })).status, 200);
    assert.equal(await asRoot("SHOW DATABASES LIKE 'alice\\_%'"), '');
    assert.equal(await asRoot("SELECT User FROM mysql.user WHERE User LIKE 'alice\\_%'"), '');
    assert.equal(await asRoot("SHOW DATABASES LIKE 'bob\\_%'"), 'bob_alice_x\n');
  });
});
