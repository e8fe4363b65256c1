// Backups on a fleet of two sandboxes on one PostgreSQL store, each a whole hosting server with its
// own restic repository (CONTRACT §12, §15): an account with a PHP site and a MariaDB database is
// backed up on one and moved to two; through two, listbackups lists one's snapshot and restoreacct
// of it puts the deleted page and the dropped table back on two, served again. A removed account's
// snapshot is listed and restored through the server that did not take it, which makes the account
// again, served, on the one that did.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { postgresForTest, tempDir } from '../helpers.ts';
import { BERTH, curl, type RunningSandbox, sandboxHolderCall, startSandbox } from '../process.ts';

interface Listed {
  id: string;
  time: string;
  size: number;
  server: string;
}

describe('backups through either of two sandboxes of one fleet', () => {
  const dataDir = tempDir('berth-sandbox-backups-fleet-');
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  const running: RunningSandbox[] = [];
  let one: SandboxInfo;
  let two: SandboxInfo;

  /** A page of `domain` from one sandbox's nginx (its certificate is not what is tested here). */
  const page = (sandbox: SandboxInfo, domain: string, path = '/') =>
    curl([
      '-k',
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  const api = (sandbox: SandboxInfo, op: string, params: Record<string, string>) => {
    const body = new URLSearchParams({ apiuser: sandbox.api_user, apiauth: sandbox.api_password, ...params });
    const reply = curl(['-k', '--data', body.toString(), `${sandbox.api}api/v1/${op}/`]);
    return { status: reply.status, body: reply.body, data: () => JSON.parse(reply.body).data as unknown };
  };
  const ok = (sandbox: SandboxInfo, op: string, params: Record<string, string>) => {
    const reply = api(sandbox, op, params);
    assert.equal(reply.status, 200, reply.body);
    return reply.data();
  };
  const list = (sandbox: SandboxInfo, user: string) =>
    (ok(sandbox, 'listbackups', { user }) as { snapshots: Listed[] }).snapshots;
  /** Backs `user` up (asked through `through`) and waits for its snapshot. */
  const backup = async (through: SandboxInfo, user: string) => {
    const count = list(through, user).length;
    ok(through, 'backupacct', { user });
    for (let i = 0; i < 240; i++) {
      const snapshots = list(through, user);
      if (snapshots.length > count) return snapshots.at(-1)!;
      await sleep(500);
    }
    assert.fail(`no backup of ${user}: ${await running[0]!.log()}`);
  };
  const berthIn = (i: number, args: string[]) =>
    running[i]!.exec([process.execPath, BERTH, ...args, '--data-dir', '/var/lib/berth']);
  /** The page, once nginx serves it (a new site may take a reload). */
  const served = async (sandbox: SandboxInfo, domain: string, path = '/') => {
    let reply = page(sandbox, domain, path);
    for (let i = 0; i < 100 && reply.status !== 200; i++) {
      await sleep(200);
      reply = page(sandbox, domain, path);
    }
    return reply;
  };

  before(async () => {
    database = await postgresForTest();
    for (const name of ['one', 'two'])
      running.push(await startSandbox(join(dataDir, name), ['--node', name, '--database', database.url]));
    [one, two] = running.map((r) => r.info) as [SandboxInfo, SandboxInfo];
  });
  after(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await database?.release();
  });

  it('restores through the new server, from the old one’s snapshot, a deleted page and a dropped table', async () => {
    ok(one, 'createacct', {
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'Alice-pass-1234',
      server: 'one',
    });
    const holder = { user: 'alice', password: 'Alice-pass-1234' };
    for (const [op, params] of [
      ['add_database', { name: 'wp' }],
      ['add_database_user', { name: 'wp', password: 'Db-pass-1234' }],
      ['grant_database', { database: 'wp', dbuser: 'wp' }],
    ] as const) {
      const reply = await sandboxHolderCall(one, holder, op, params);
      assert.equal(reply.status, 200, reply.body.info);
    }
    const made = await running[0]!.asUser(
      'alice',
      `printf '%s' 'the page' > /home/alice/public_html/index.html && MYSQL_PWD=Db-pass-1234 mysql -u alice_wp alice_wp -e "CREATE TABLE posts (title TEXT); INSERT INTO posts VALUES ('kept')" && printf '%s' '<?php echo (new mysqli("localhost", "alice_wp", "Db-pass-1234", "alice_wp"))->query("SELECT title FROM posts")->fetch_row()[0];' > /home/alice/public_html/db.php`,
    );
    assert.equal(made.code, 0, made.stderr);
    assert.equal((await served(one, 'alice.example', '/db.php')).body, 'kept');
    // Asked through two, made by one, the account's server.
    const taken = await backup(two, 'alice');
    assert.equal(taken.server, 'one');

    const moved = await berthIn(0, ['move-account', 'alice', '--to', 'two']);
    assert.equal(moved.code, 0, moved.stderr + (await running[0]!.log()) + (await running[1]!.log()));
    assert.equal((await served(two, 'alice.example')).body, 'the page');
    // One's snapshot, listed through two, the account's server now, and through one.
    for (const sandbox of [one, two])
      assert.deepEqual(
        list(sandbox, 'alice').map((s) => [s.id, s.server]),
        [[taken.id, 'one']],
      );

    const broke = await running[1]!.asUser(
      'alice',
      `rm /home/alice/public_html/index.html && MYSQL_PWD=Db-pass-1234 mysql -u alice_wp alice_wp -e "DROP TABLE posts"`,
    );
    assert.equal(broke.code, 0, broke.stderr);
    assert.notEqual(page(two, 'alice.example').status, 200);
    const restored = api(two, 'restoreacct', { user: 'alice', snapshot: taken.id.slice(0, 8) });
    assert.equal(restored.status, 200, restored.body + (await running[1]!.log()) + (await running[0]!.log()));
    // Served again, by two, exactly as the snapshot had them.
    assert.equal((await served(two, 'alice.example')).body, 'the page');
    assert.equal((await served(two, 'alice.example', '/db.php')).body, 'kept');
    const owner = await running[1]!.exec(['/usr/bin/stat', '-c', '%U', '/home/alice/public_html/index.html']);
    assert.equal(owner.stdout.trim(), 'alice');
    // Neither server keeps anything staged; one still has no alice.
    for (const i of [0, 1]) {
      const staged = await running[i]!.exec([
        '/usr/bin/find',
        '/var/lib/berth/restore-staging',
        '-mindepth',
        '1',
      ]);
      assert.equal(staged.stdout, '');
    }
    assert.notEqual((await running[0]!.exec(['/usr/bin/id', 'alice'])).code, 0);
  });

  it('lists and restores a removed account through the server that did not take its snapshot', async () => {
    ok(one, 'createacct', {
      user: 'bob',
      domain: 'bob.example',
      email: 'bob@example.org',
      package: 'default',
      password: 'Bob-pass-12345',
      server: 'one',
    });
    const wrote = await running[0]!.asUser(
      'bob',
      `printf '%s' 'bob kept' > /home/bob/public_html/index.html`,
    );
    assert.equal(wrote.code, 0, wrote.stderr);
    const taken = await backup(one, 'bob');
    ok(two, 'removeacct', { user: 'bob' });
    assert.notEqual((await running[0]!.exec(['/usr/bin/id', 'bob'])).code, 0);
    assert.deepEqual(
      list(two, 'bob').map((s) => [s.id, s.server]),
      [[taken.id, 'one']],
    );
    // Alice's snapshot is none of bob's.
    const alices = list(two, 'alice')[0]!.id;
    const foreign = api(two, 'restoreacct', { user: 'bob', snapshot: alices });
    assert.equal(foreign.status, 400, foreign.body);
    assert.equal((foreign.data() as { code: string }).code, 'object_not_found');

    ok(two, 'restoreacct', { user: 'bob', snapshot: taken.id });
    // Made again on one, whose repository holds the snapshot, and served there.
    assert.equal((await running[0]!.exec(['/usr/bin/id', 'bob'])).code, 0);
    assert.notEqual((await running[1]!.exec(['/usr/bin/id', 'bob'])).code, 0);
    assert.equal((await served(one, 'bob.example')).body, 'bob kept');
    for (const i of [0, 1]) {
      const doctor = await berthIn(i, ['doctor']);
      assert.doesNotMatch(doctor.stdout, /alice|bob/, doctor.stdout);
    }
  });
});
