// SIGTERM while billing software is creating accounts: the server stops taking connections,
// finishes the calls in flight, exits 0, and every call that was answered 200 is in the store.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { findAccount } from '../src/store/accounts.ts';
import { openStore } from '../src/store/open.ts';
import { tempDir } from './helpers.ts';
import { berth, post, serve } from './process.ts';

describe('graceful shutdown', () => {
  const dataDir = tempDir('berth-shutdown-');
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('loses no call that answered 200', async () => {
    const server = await serve(dataDir);
    await berth(
      ['api-user', 'create', 'billing', '--password-stdin', '--data-dir', dataDir],
      'billing-password-1',
    );
    const created: string[] = [];
    let failures = 0;
    let stopping = false;
    const worker = async (n: number) => {
      for (let i = 0; !stopping || i < 1000; i++) {
        const user = `w${n}x${i}`;
        try {
          const reply = await post(dataDir, server.adminPort, '/api/v1/createacct/', {
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: `apiuser=billing&apiauth=billing-password-1&user=${user}&domain=${user}.example&email=a%40example.com&package=default`,
          });
          if (reply.status === 200) created.push(user);
          else if (reply.status !== 503) failures++;
        } catch {
          return; // the server has stopped taking connections
        }
      }
    };
    const workers = Array.from({ length: 20 }, (_, n) => worker(n));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    stopping = true;
    const exitCode = await server.stop('SIGTERM');
    await Promise.all(workers);
    assert.equal(exitCode, 0);
    assert.equal(failures, 0);
    assert.ok(created.length > 20, `only ${created.length} accounts were created before SIGTERM`);
    const store = await openStore(dataDir);
    try {
      for (const user of created)
        assert.ok(await findAccount(store.db, user), `${user} answered 200 but is not in the store`);
    } finally {
      await store.close();
    }
  });

  it('stops gracefully even when SIGTERM comes while it is starting', async () => {
    for (let i = 0; i < 5; i++) {
      const server = await serve(dataDir);
      assert.equal(await server.stop('SIGTERM'), 0, `round ${i}`);
    }
  });

  it('stops when npm, which started it, is stopped without passing the signal on', async () => {
    const dir = tempDir('berth-npx-');
    const serving = () => {
      try {
        return execFileSync('/usr/bin/pgrep', ['-f', `serve --data-dir ${dir}`])
          .toString()
          .trim()
          .split('\n');
      } catch {
        return [];
      }
    };
    try {
      const npm = await serve(dir, [], {}, ['npm', 'exec', '--yes', '--', 'berth']);
      assert.ok(
        serving().some((pid) => Number(pid) !== npm.child.pid),
        'the server process',
      );
      await npm.stop('SIGTERM'); // npm's shell exits on it and passes nothing on to the server
      const deadline = Date.now() + 15_000;
      while (serving().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(serving(), [], 'the server outlived npm');
    } finally {
      try {
        execFileSync('/usr/bin/pkill', ['-KILL', '-f', `serve --data-dir ${dir}`], { stdio: 'ignore' });
      } catch {
        // nothing left to kill
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
