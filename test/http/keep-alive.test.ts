// Billing software keeps its connection open between calls. A connection is not checked again
// while the store stands still, so these run against a real server over one real TLS connection,
// with every change made by another process (the CLI), as CONTRACT §3 has it: a reset, an access
// change, a deletion and a lock-out apply from the next request on, on that connection too.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tempDir } from '../helpers.ts';
import { berth, type Served, serve } from '../process.ts';

describe('one keep-alive connection', () => {
  const dataDir = tempDir('berth-keep-alive-');
  let server: Served;
  before(async () => {
    server = await serve(dataDir);
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (agent: Agent, user: string, password: string) =>
    new Promise<{ status: number; port: number }>((resolve, reject) => {
      const req = request(
        {
          host: 'localhost',
          port: server.adminPort,
          path: '/api/v1/test_connection/',
          method: 'POST',
          headers: { 'x-api-user': user, 'x-api-password': password },
          agent,
          ca: readFileSync(join(dataDir, 'tls', 'cert.pem')),
          servername: 'localhost',
        },
        (res) => {
          const port = res.socket.localPort ?? 0;
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, port }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  const cli = async (args: string[], input = '') => {
    const result = await berth([...args, '--data-dir', dataDir], input);
    assert.equal(result.code, 0, result.stderr);
  };

  it('applies a reset, an access change, a deletion and a lock-out from the next request on', async () => {
    const kept = new Agent({ keepAlive: true, maxSockets: 1 });
    const other = new Agent({ keepAlive: false });
    try {
      await cli(['api-user', 'create', 'billing', '--password-stdin'], 'first-password-1');
      const statuses: number[] = [];
      const ports = new Set<number>();
      const on = async (user: string, password: string) => {
        const reply = await call(kept, user, password);
        ports.add(reply.port);
        statuses.push(reply.status);
      };

      await on('billing', 'first-password-1');
      await on('billing', 'first-password-1');
      // Another password on the same connection is checked, not taken for the one verified.
      await on('billing', 'first-password-X');
      await cli(['api-user', 'reset-password', 'billing', '--password-stdin'], 'second-password-2');
      await on('billing', 'first-password-1');
      await on('billing', 'second-password-2');
      await cli(['api-user', 'set-access', 'billing', '--allow-ip', '192.0.2.0/24']);
      await on('billing', 'second-password-2');
      await cli(['api-user', 'set-access', 'billing', '--open']);
      await on('billing', 'second-password-2');
      await cli(['api-user', 'delete', 'billing']);
      await on('billing', 'second-password-2');
      await cli(['api-user', 'create', 'billing', '--password-stdin'], 'third-password-3');
      await on('billing', 'third-password-3');
      await on('billing', 'third-password-3');
      assert.deepEqual(statuses, [200, 200, 403, 403, 200, 403, 200, 403, 200, 200]);

      // Wrong passwords on other connections from the same address lock it out, this one too.
      let locked = false;
      for (let i = 0; i < 12 && !locked; i++)
        locked = (await call(other, 'billing', `wrong-password-${i}`)).status === 429;
      assert.ok(locked, 'the address was never locked out');
      await on('billing', 'third-password-3');
      assert.equal(statuses.at(-1), 429);
      assert.equal(ports.size, 1, 'the calls did not share one connection');
    } finally {
      kept.destroy();
      other.destroy();
    }
  });
});
