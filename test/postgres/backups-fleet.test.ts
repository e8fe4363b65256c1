// Backups through any server of a fleet (CONTRACT §15): two linux-driver servers, each in its own
// system root with its own restic repository, on one PostgreSQL store. An account backed up on a and
// moved to b keeps a's snapshots: listbackups through either lists them with b's, each naming its
// server, and restoreacct and restore_backup through either put a deleted file back on b from a's
// repository. A removed account's snapshots are listed and restored through the server that did not
// take them, which makes the account again on the one that did. A snapshot id of one user never
// reaches another's data.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lchownSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { postgresForTest, tempDir } from '../helpers.ts';
import { csrfOf } from '../portal/pages.ts';
import { berth, type HttpsReply, post, type Served, serve } from '../process.ts';
import { makeSystemRoot } from '../provision/system-root.ts';

const CREDS = 'apiuser=fleet&apiauth=fleet-password-1';
const NAMES = ['a', 'b'] as const;
const A = 0;
const B = 1;

interface Listed {
  id: string;
  time: string;
  size: number;
  server: string;
}

describe('backups on a fleet of two linux-driver servers', () => {
  const dirs = NAMES.map((name) => tempDir(`berth-backup-fleet-${name}-`));
  const roots = NAMES.map(() => makeSystemRoot());
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  let store: pg.Client;
  const nodes: Served[] = [];

  const send = (node: number, path: string, params: string) =>
    post(dirs[node]!, nodes[node]!.adminPort, path, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `${CREDS}&${params}`,
    });
  const call = (node: number, op: string, params: string) => send(node, `/api/v1/${op}/`, params);
  /** A holder's operation, called by the administrator for the account `user=` names. */
  const holderCall = (node: number, op: string, params: string) => send(node, `/api/account/${op}/`, params);
  const ok = async (reply: Promise<HttpsReply>) => {
    const answer = await reply;
    assert.equal(answer.status, 200, answer.body);
    return answer.json().data as Record<string, unknown>;
  };
  const cli = (args: string[], input = '') =>
    berth([...args, '--data-dir', dirs[A]!, '--database', database.url], input);
  const home = (i: number, user: string, ...path: string[]) => join(roots[i]!, 'home', user, ...path);
  /** Writes a file of the account's own into its home on server i. */
  const write = (i: number, user: string, path: string, content: string) => {
    const { uid, gid } = findSystemUser(roots[i]!, user)!;
    writeFileSync(home(i, user, path), content);
    lchownSync(home(i, user, path), uid, gid);
  };
  /**
   * Backs the account up through server `through` and waits until its own server made the snapshot:
   * up to three minutes, for restic's key derivation on two cores shared with whole sandboxes.
   */
  const backup = async (through: number, user: string) => {
    const { job } = (await ok(call(through, 'backupacct', `user=${user}`))) as { job: string };
    for (let i = 0; i < 360; i++) {
      const { rows } = await store.query('select state, error from backup_jobs where id = $1', [job]);
      if (rows[0]?.state === 'done') return;
      assert.notEqual(rows[0]?.state, 'failed', rows[0]?.error);
      await sleep(500);
    }
    assert.fail(`backup job ${job} of ${user} did not finish`);
  };
  const list = async (node: number, user: string) =>
    ((await ok(call(node, 'listbackups', `user=${user}`))) as { snapshots: Listed[] }).snapshots;
  const serverOf = async (user: string) =>
    (await store.query('select server from accounts where "user" = $1', [user])).rows[0]?.server as
      | string
      | undefined;
  /** What a server's restore staging holds: nothing once a restore is over. */
  const staging = (i: number) => {
    const dir = join(dirs[i]!, 'restore-staging');
    return existsSync(dir) ? readdirSync(dir) : [];
  };
  /**
   * Each server's restore staging once emptied: the server that streamed a snapshot's parts to the
   * other removes them when the stream has ended, which may be a moment after the restore answers.
   */
  const stagingLeft = async (i: number) => {
    for (let tries = 0; staging(i).length > 0 && tries < 50; tries++) await sleep(100);
    return staging(i);
  };

  before(async () => {
    database = await postgresForTest();
    store = new pg.Client({ connectionString: database.url });
    NAMES.forEach((name, i) => {
      writeFileSync(
        join(dirs[i]!, 'berth.toml'),
        [
          `node_name = "${name}"`,
          'host_name = "localhost"',
          `shared_ipv4 = "192.0.2.${i + 1}"`,
          'shared_ipv6 = ""',
          '[linux]',
          `http_port = ${19700 + i + 2 * (process.pid % 150)}`,
          '',
        ].join('\n'),
      );
    });
    for (const i of [A, B])
      nodes[i] = await serve(dirs[i]!, [
        '--database',
        database.url,
        '--driver',
        'linux',
        '--system-root',
        roots[i]!,
      ]);
    await store.connect();
    const created = await cli(['api-user', 'create', 'fleet', '--password-stdin'], 'fleet-password-1\n');
    assert.equal(created.code, 0, created.stderr);
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node?.stop()));
    await store?.end();
    await database?.release();
    for (const dir of [...dirs, ...roots]) rmSync(dir, { recursive: true, force: true });
  });

  let first = '';

  it('lists, after a move, the old server’s snapshots through the new one, each naming its server', async () => {
    await ok(
      call(
        A,
        'createacct',
        'user=mover&domain=mover-fleet.example&email=m%40example.org&package=default&server=a&password=Mover-pass-1234',
      ),
    );
    write(A, 'mover', 'public_html/index.html', 'before the move\n');
    // Asked through b, made by a, the account's server.
    await backup(B, 'mover');
    const onA = await list(A, 'mover');
    assert.equal(onA.length, 1);
    assert.equal(onA[0]!.server, 'a');
    first = onA[0]!.id;

    const moved = await cli(['move-account', 'mover', '--to', 'b']);
    assert.equal(moved.code, 0, moved.stderr);
    assert.equal(await serverOf('mover'), 'b');
    assert.equal(readFileSync(home(B, 'mover', 'public_html/index.html'), 'utf8'), 'before the move\n');
    // a's snapshot, listed through b and through a, though the account is b's now.
    for (const node of [A, B]) assert.deepEqual(await list(node, 'mover'), onA);
    // b's first backup of it goes to b's repository; the list has both, oldest first.
    write(B, 'mover', 'public_html/index.html', 'on b\n');
    await backup(A, 'mover');
    const both = await list(B, 'mover');
    assert.deepEqual(
      both.map((s) => s.server),
      ['a', 'b'],
    );
    assert.equal(both[0]!.id, first);
    assert.deepEqual(await list(A, 'mover'), both);
    // The holder's own list says the same.
    const holders = (await ok(holderCall(A, 'list_backups', 'user=mover'))) as { snapshots: Listed[] };
    assert.deepEqual(holders.snapshots, both);
  });

  it('restores through b, from a’s repository, a file deleted on b, as the account’s own', async () => {
    rmSync(home(B, 'mover', 'public_html/index.html'));
    write(B, 'mover', 'public_html/later.html', 'made after\n');
    const restored = await ok(call(B, 'restoreacct', `user=mover&snapshot=${first.slice(0, 8)}&what=files`));
    assert.match(String(restored), /^Restored files of mover from snapshot [0-9a-f]{8}$/);
    assert.equal(readFileSync(home(B, 'mover', 'public_html/index.html'), 'utf8'), 'before the move\n');
    // Exactly the snapshot's files: what was made after it is gone.
    assert.equal(existsSync(home(B, 'mover', 'public_html/later.html')), false);
    const owner = findSystemUser(roots[B]!, 'mover')!;
    assert.equal(statSync(home(B, 'mover', 'public_html/index.html')).uid, owner.uid);
    assert.equal(existsSync(home(A, 'mover')), false, 'a keeps no home of it');
    assert.deepEqual(await stagingLeft(A), []);
    assert.deepEqual(await stagingLeft(B), []);
  });

  it('restores one path through a, whose repository holds the snapshot, into the account on b; restore_backup too', async () => {
    write(B, 'mover', 'public_html/index.html', 'changed\n');
    await ok(call(A, 'restoreacct', `user=mover&snapshot=${first}&path=public_html/index.html`));
    assert.equal(readFileSync(home(B, 'mover', 'public_html/index.html'), 'utf8'), 'before the move\n');
    write(B, 'mover', 'public_html/index.html', 'changed again\n');
    await ok(
      holderCall(A, 'restore_backup', `user=mover&snapshot=${first}&what=files&path=public_html/index.html`),
    );
    assert.equal(readFileSync(home(B, 'mover', 'public_html/index.html'), 'utf8'), 'before the move\n');
    assert.deepEqual(await stagingLeft(A), []);
    assert.deepEqual(await stagingLeft(B), []);
  });

  it('lists and restores a removed account through the server that did not take its snapshot', async () => {
    await ok(
      call(
        A,
        'createacct',
        'user=gone&domain=gone-fleet.example&email=g%40example.org&package=default&server=a',
      ),
    );
    write(A, 'gone', 'public_html/index.html', 'gone but kept\n');
    await backup(A, 'gone');
    await ok(call(A, 'removeacct', 'user=gone'));
    assert.equal(existsSync(home(A, 'gone')), false);
    const listed = await list(B, 'gone');
    assert.equal(listed.length, 1);
    assert.equal(listed[0]!.server, 'a');
    // Another account's snapshot is none of this one's, and the reverse.
    const foreign = await call(B, 'restoreacct', `user=gone&snapshot=${first}`);
    assert.equal(foreign.status, 400, foreign.body);
    assert.equal((foreign.json().data as { code: string }).code, 'object_not_found');
    const swapped = await call(B, 'restoreacct', `user=mover&snapshot=${listed[0]!.id}`);
    assert.equal(swapped.status, 400, swapped.body);
    assert.equal((swapped.json().data as { code: string }).code, 'object_not_found');
    assert.equal(await serverOf('gone'), undefined, 'nothing was made by the refusals');

    await ok(call(B, 'restoreacct', `user=gone&snapshot=${listed[0]!.id}`));
    // Made again on a, whose repository holds the snapshot, with its files.
    assert.equal(await serverOf('gone'), 'a');
    assert.equal(readFileSync(home(A, 'gone', 'public_html/index.html'), 'utf8'), 'gone but kept\n');
    assert.equal(
      statSync(home(A, 'gone', 'public_html/index.html')).uid,
      findSystemUser(roots[A]!, 'gone')!.uid,
    );
    assert.equal(existsSync(home(B, 'gone')), false);
    assert.equal(findSystemUser(roots[B]!, 'gone'), undefined);
  });

  it('the panel on b gives the holder a’s snapshot of its home as a .tar.gz, and no other account’s', async () => {
    const jar = join(dirs[B]!, 'panel-cookies');
    const panel = (path: string, args: string[] = []) =>
      execFileSync(
        '/usr/bin/curl',
        ['-sS', '-k', '-b', jar, '-c', jar, ...args, `https://localhost:${nodes[B]!.customerPort}${path}`],
        { maxBuffer: 64 * 1024 * 1024 },
      );
    const shown = panel('/login').toString();
    panel('/login', [
      '--data',
      new URLSearchParams({
        _csrf: csrfOf(shown),
        username: 'mover',
        password: 'Mover-pass-1234',
      }).toString(),
    ]);
    const archive = panel(`/backups/download?snapshot=${first}`, ['--fail']);
    const page = execFileSync('/usr/bin/tar', ['-xzO', '--wildcards', '*/public_html/index.html'], {
      input: archive,
    }).toString();
    assert.equal(page, 'before the move\n');
    const gone = (await list(A, 'gone'))[0]!.id;
    const refused = panel(`/backups/download?snapshot=${gone}`, ['-o', '/dev/null', '-w', '%{http_code}']);
    assert.equal(refused.toString(), '404');
  });

  it('answers 503 node_unavailable, naming it, while a server holding snapshots is down', async () => {
    await nodes[A]!.stop();
    const reply = await call(B, 'listbackups', 'user=mover');
    assert.equal(reply.status, 503, reply.body);
    assert.equal((reply.json().data as { code: string }).code, 'node_unavailable');
    assert.match(reply.body, /\ba\b/);
    const restore = await call(B, 'restoreacct', `user=mover&snapshot=${first}&what=files`);
    assert.equal(restore.status, 503, restore.body);
  });
});
