// Two `berth serve` processes on one PostgreSQL store, raced as a load balancer would spread calls.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { FORM, postgresForTest, tempDir } from '../helpers.ts';
import { berth, type HttpsReply, post, type Served, serve } from '../process.ts';

const CREDS = 'apiuser=lb&apiauth=lb-password-1';

describe('two servers sharing one PostgreSQL store', () => {
  const dirs = [tempDir('berth-node-a-'), tempDir('berth-node-b-')];
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  let nodes: Served[] = [];

  const call = (
    node: number,
    op: string,
    body: string,
    headers: Record<string, string> = {},
  ): Promise<HttpsReply> =>
    post(dirs[node]!, nodes[node]!.adminPort, `/api/v1/${op}/`, { headers: { ...FORM, ...headers }, body });
  const cli = (args: string[], input = '') =>
    berth([...args, '--data-dir', dirs[0]!, '--database', database.url], input);

  before(async () => {
    database = await postgresForTest();
    nodes = await Promise.all(dirs.map((dir) => serve(dir, ['--database', database.url])));
    const created = await cli(['api-user', 'create', 'lb', '--password-stdin'], 'lb-password-1\n');
    assert.equal(created.code, 0, created.stderr);
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await database?.release();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('names the PostgreSQL store at start, without its password', () => {
    assert.match(nodes[0]!.stdout(), /"store":"PostgreSQL 127\.0\.0\.1:\d+\/[^"]*"/);
    assert.doesNotMatch(nodes[0]!.output(), /postgres:\/\/[^"]*:[^"@]*@/);
  });

  it('gives exactly one 200 when both race for the same user name', async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(
          i % 2,
          'createacct',
          `${CREDS}&user=racer&domain=racer${i}.example&email=r%40example.com&package=default`,
        ),
      ),
    );
    assert.equal(replies.filter((r) => r.status === 200).length, 1);
    assert.equal(
      replies.filter((r) => (r.json().data as { code?: string }).code === 'account_exists').length,
      9,
    );
  });

  it("gives the last slot of a reseller's limit to exactly one call across both", async () => {
    const made = await call(
      0,
      'createacct',
      `${CREDS}&user=res&domain=res.example&email=r%40example.com&package=default&reseller=on&reseller_limt=4`,
    );
    assert.equal(made.status, 200);
    const asReseller = { 'X-RESELLER': 'res' };
    for (const user of ['kid1', 'kid2', 'kid3']) {
      const reply = await call(
        1,
        'createacct',
        `${CREDS}&user=${user}&domain=${user}.example&email=k%40example.com&package=default`,
        asReseller,
      );
      assert.equal(reply.status, 200);
    }
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        call(
          i % 2,
          'createacct',
          `${CREDS}&user=last${i}&domain=last${i}.example&email=l%40example.com&package=default`,
          asReseller,
        ),
      ),
    );
    assert.equal(replies.filter((r) => r.status === 200).length, 1);
    assert.equal(
      replies.filter((r) => (r.json().data as { code?: string }).code === 'reseller_limit').length,
      9,
    );
    const counted = await call(1, 'get_current_users_count', CREDS, asReseller);
    assert.deepEqual(counted.json().data, { users: 4 });
  });

  it('refuses on one node, from the next request on, a password reset on the other', async () => {
    assert.equal((await call(1, 'test_connection', CREDS)).status, 200);
    assert.equal((await call(1, 'test_connection', CREDS)).status, 200);
    const reset = await cli(['api-user', 'reset-password', 'lb', '--password-stdin'], 'lb-password-2\n');
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal((await call(1, 'test_connection', CREDS)).status, 403);
    assert.equal((await call(0, 'test_connection', CREDS)).status, 403);
    assert.equal((await call(1, 'test_connection', 'apiuser=lb&apiauth=lb-password-2')).status, 200);
  });

  it('keeps the audit entries of both nodes', async () => {
    const audit = await cli(['audit', '--json', '--limit', '1000']);
    const entries = JSON.parse(audit.stdout) as { operation: string; status: number }[];
    // 10 racing + 1 reseller + 3 children + 10 racing for the last slot.
    assert.equal(entries.filter((e) => e.operation === 'createacct').length, 24);
  });

  it('counts failed logins on both nodes toward one lock-out', async () => {
    // Alternate between the nodes: neither sees ten failures alone, yet the address is locked.
    const seen = [0, 0];
    let lockedAfter = 0;
    for (let i = 0; i < 10 && lockedAfter === 0; i++) {
      const reply = await call(i % 2, 'test_connection', 'apiuser=lb&apiauth=wrong-password');
      if (reply.status === 429) lockedAfter = i;
      else seen[i % 2]!++;
    }
    const last = await call(0, 'test_connection', 'apiuser=lb&apiauth=lb-password-2');
    assert.equal(last.status, 429);
    assert.equal((await call(1, 'test_connection', 'apiuser=lb&apiauth=lb-password-2')).status, 429);
    assert.ok(seen[0]! < 10 && seen[1]! < 10, `failures seen per node: ${seen}`);
  });
});
