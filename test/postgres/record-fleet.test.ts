// A fleet of two record-driver servers on one PostgreSQL store (billing integration tests run one):
// an account moves by its record alone, and answers from either server as on its new one.
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { postgresForTest, tempDir } from '../helpers.ts';
import { berth, post, type Served, serve } from '../process.ts';

describe('moving an account between two record-driver servers', () => {
  const dirs = ['a', 'b'].map((name) => tempDir(`berth-record-fleet-${name}-`));
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  const nodes: Served[] = [];
  const cli = (args: string[], input = '') =>
    berth([...args, '--data-dir', dirs[0]!, '--database', database.url], input);
  const call = async (i: number, op: string, params: string) => {
    const reply = await post(dirs[i]!, nodes[i]!.adminPort, `/api/v1/${op}/`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `apiuser=billing&apiauth=billing-password-1&${params}`,
    });
    assert.equal(reply.status, 200, reply.body);
    return reply.json().data as Record<string, unknown>;
  };

  before(async () => {
    database = await postgresForTest();
    for (const [i, name] of ['a', 'b'].entries()) {
      writeFileSync(join(dirs[i]!, 'berth.toml'), `node_name = "${name}"\nhost_name = "localhost"\n`);
      nodes.push(await serve(dirs[i]!, ['--database', database.url]));
    }
    assert.equal(
      (await cli(['api-user', 'create', 'billing', '--password-stdin'], 'billing-password-1\n')).code,
      0,
    );
  });
  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await database?.release();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('switches the record to the new server, and refuses a server that does not exist', async () => {
    const made = await call(
      0,
      'createacct',
      'user=rita&domain=rita.example&email=r%40example.org&package=default&server=b',
    );
    assert.equal(made.server, 'b');
    const refused = await cli(['move-account', 'rita', '--to', 'c']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /there is no server named c/);
    const moved = await cli(['move-account', 'rita', '--to', 'a']);
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, /^Account rita moved from b to a$/m);
    for (const i of [0, 1]) {
      const summary = await call(i, 'accountsummary', 'user=rita');
      assert.equal((summary.acct as { server: string }).server, 'a');
    }
    await call(1, 'suspendacct', 'user=rita&reason=After+the+move');
  });

  it('lets a holder log in and change its password through either server (CONTRACT §14)', async () => {
    await call(
      0,
      'createacct',
      'user=hana&domain=hana.example&email=h%40example.org&package=default&server=b&password=hana-pass-111',
    );
    const holder = (i: number, password: string, op: string, body = '') =>
      post(dirs[i]!, nodes[i]!.customerPort, `/api/v1/${op}/`, {
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`hana:${password}`).toString('base64')}`,
        },
        body,
      });
    // Through a, the server that does not hold the account: the change is made on b.
    const changed = await holder(
      0,
      'hana-pass-111',
      'change_password',
      'current_password=hana-pass-111&password=hana-pass-222',
    );
    assert.equal(changed.status, 200, changed.body);
    for (const i of [0, 1]) {
      assert.equal((await holder(i, 'hana-pass-222', 'account_info')).status, 200);
      assert.equal((await holder(i, 'hana-pass-111', 'account_info')).status, 403);
    }
    const audit = JSON.parse((await cli(['audit', '--json'])).stdout) as {
      api_user: string;
      operation: string;
    }[];
    assert.ok(audit.some((e) => e.operation === 'change_password' && e.api_user === 'customer:hana'));
  });
});
