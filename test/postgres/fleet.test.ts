// Two linux-driver servers, each in its own system root, on one PostgreSQL store: each account is
// on the server that made it, `berth nodes` lists both, and a change to an account's system sent
// through the other server is refused with 503 node_unavailable, changing nothing anywhere.
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postgresForTest, tempDir } from '../helpers.ts';
import { berth, type HttpsReply, post, type Served, serve } from '../process.ts';
import { makeSystemRoot } from '../provision/system-root.ts';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const CREDS = 'apiuser=fleet&apiauth=fleet-password-1';
const NAMES = ['a', 'b'] as const;

describe('a fleet of two linux-driver servers on one PostgreSQL store', () => {
  const dirs = NAMES.map((name) => tempDir(`berth-fleet-${name}-`));
  const roots = NAMES.map(() => makeSystemRoot());
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  let nodes: Served[] = [];

  const call = (node: number, op: string, params: string): Promise<HttpsReply> =>
    post(dirs[node]!, nodes[node]!.adminPort, `/api/v1/${op}/`, {
      headers: FORM,
      body: `${CREDS}&${params}`,
    });
  const cli = (args: string[], input = '') =>
    berth([...args, '--data-dir', dirs[0]!, '--database', database.url], input);
  const home = (node: number, user: string) => join(roots[node]!, 'home', user);

  before(async () => {
    database = await postgresForTest();
    NAMES.forEach((_, i) => {
      writeFileSync(
        join(dirs[i]!, 'berth.toml'),
        [
          `node_name = "${NAMES[i]}"`,
          'host_name = "panel.example.net"',
          'shared_ipv4 = "127.0.0.1"',
          'shared_ipv6 = ""',
          '[linux]',
          `http_port = ${19600 + i + 2 * (process.pid % 150)}`,
          '',
        ].join('\n'),
      );
    });
    nodes = await Promise.all(
      dirs.map((dir, i) =>
        serve(dir, ['--database', database.url, '--driver', 'linux', '--system-root', roots[i]!]),
      ),
    );
    const created = await cli(['api-user', 'create', 'fleet', '--password-stdin'], 'fleet-password-1\n');
    assert.equal(created.code, 0, created.stderr);
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await database?.release();
    for (const dir of [...dirs, ...roots]) rmSync(dir, { recursive: true, force: true });
  });

  it('lists both servers as up with their address, driver and accounts', async () => {
    const made = await call(
      0,
      'createacct',
      'user=alice&domain=alice-fleet.example&email=a%40example.org&package=default',
    );
    assert.equal(made.status, 200, made.body);
    assert.equal((made.json().data as { server: string }).server, 'a');
    assert.ok(existsSync(home(0, 'alice')));
    assert.ok(!existsSync(home(1, 'alice')));
    const listed = await cli(['nodes', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const servers = JSON.parse(listed.stdout) as {
      name: string;
      state: string;
      driver: string;
      accounts: number;
      advertiseUrl: string;
    }[];
    assert.deepEqual(
      servers.map((s) => [s.name, s.state, s.driver, s.accounts]),
      [
        ['a', 'up', 'linux', 1],
        ['b', 'up', 'linux', 0],
      ],
    );
    assert.match(servers[0]!.advertiseUrl, /^https:\/\/panel\.example\.net:\d+$/);
    const table = await cli(['nodes']);
    assert.match(table.stdout, /^NAME +ADDRESS +DRIVER +STATE +ACCOUNTS/m);
  });

  it('refuses through b a change to an account on a, with 503 and nothing changed; a makes it', async () => {
    for (const [op, params] of [
      ['suspendacct', 'user=alice&reason=Unpaid'],
      ['passwd', 'user=alice&password=new-password-123'],
      ['removeacct', 'user=alice'],
    ] as const) {
      const refused = await call(1, op, params);
      assert.equal(refused.status, 503, `${op}: ${refused.body}`);
      assert.equal((refused.json().data as { code: string }).code, 'node_unavailable');
      assert.equal(refused.headers['retry-after'], '30');
    }
    const summary = await call(1, 'accountsummary', 'user=alice');
    assert.equal((summary.json().data as { acct: { is_suspended: string } }).acct.is_suspended, 'no');
    assert.ok(existsSync(home(0, 'alice')));
    const removed = await call(0, 'removeacct', 'user=alice');
    assert.equal(removed.status, 200, removed.body);
    assert.ok(!existsSync(home(0, 'alice')));
    const doctor = await berth([
      'doctor',
      '--driver',
      'linux',
      '--system-root',
      roots[0]!,
      '--data-dir',
      dirs[0]!,
      '--database',
      database.url,
      '--node',
      'a',
    ]);
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
  });

  it('takes no new account through a drained server until it is undrained', async () => {
    assert.equal((await cli(['nodes', 'drain', 'b'])).code, 0);
    const refused = await call(
      1,
      'createacct',
      'user=bob&domain=bob-fleet.example&email=b%40example.org&package=default',
    );
    assert.equal(refused.status, 503, refused.body);
    assert.ok(!existsSync(home(1, 'bob')));
    const listed = JSON.parse((await cli(['nodes', '--json'])).stdout) as { name: string; state: string }[];
    assert.equal(listed.find((s) => s.name === 'b')?.state, 'draining');
    assert.equal((await cli(['nodes', 'undrain', 'b'])).code, 0);
    const made = await call(
      1,
      'createacct',
      'user=bob&domain=bob-fleet.example&email=b%40example.org&package=default',
    );
    assert.equal(made.status, 200, made.body);
    assert.ok(existsSync(home(1, 'bob')));
    assert.equal((await cli(['nodes', 'drain', 'ghost'])).code, 2);
  });

  it('has each server’s doctor check its own accounts only, and find no difference', async () => {
    for (const i of [0, 1]) {
      const doctor = await berth([
        'doctor',
        '--driver',
        'linux',
        '--system-root',
        roots[i]!,
        '--data-dir',
        dirs[i]!,
        '--database',
        database.url,
      ]);
      assert.equal(doctor.code, 0, `${NAMES[i]}: ${doctor.stdout}${doctor.stderr}`);
    }
  });
});
