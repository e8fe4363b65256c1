// Berth killed with SIGKILL at random points while billing software creates accounts, and Berth on
// a full disk. After a restart an account is either whole or leaves no trace; a full disk gives
// 500s that write nothing half, and Berth goes on when space returns.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { findSystemUser } from '../src/provision/linux/passwd.ts';
import { findAccount } from '../src/store/accounts.ts';
import { openStore } from '../src/store/open.ts';
import { FORM, tempDir } from './helpers.ts';
import { berth, post, type Served, serve } from './process.ts';
import { makeSystemRoot } from './provision/system-root.ts';

/**
 * createacct from `workers` clients until the server goes away: `created`, the users that got a
 * 200 so far, and `done`, all of them once the server has gone.
 */
function load(dataDir: string, port: number, prefix: string, workers = 10) {
  const created: string[] = [];
  const worker = async (n: number) => {
    for (let i = 0; ; i++) {
      const user = `${prefix}${n}x${i}`;
      try {
        const reply = await post(dataDir, port, '/api/v1/createacct/', {
          headers: FORM,
          body: `apiuser=billing&apiauth=billing-password-1&user=${user}&domain=${user}.example&email=a%40example.com&package=default`,
        });
        if (reply.status === 200) created.push(user);
      } catch {
        return;
      }
    }
  };
  return {
    created,
    done: Promise.all(Array.from({ length: workers }, (_, n) => worker(n))).then(() => created),
  };
}

async function killDuringLoad(dataDir: string, extra: string[], prefix: string): Promise<string[]> {
  const server = await serve(dataDir, extra);
  const running = load(dataDir, server.adminPort, prefix);
  // Once calls are answered (on a busy machine the first ones take a while), at a random moment.
  for (let waited = 0; running.created.length === 0 && waited < 60_000; waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 1200));
  await server.stop('SIGKILL');
  return running.done;
}

async function storeHas(dataDir: string, users: string[]): Promise<void> {
  const store = await openStore(dataDir);
  try {
    for (const user of users)
      assert.ok(await findAccount(store.db, user), `${user} answered 200 but is not in the store`);
  } finally {
    await store.close();
  }
}

describe('a server killed with SIGKILL during a createacct load', () => {
  it('keeps every answered account, whole, with the record driver', async () => {
    const dataDir = tempDir('berth-crash-');
    try {
      await berth(
        ['api-user', 'create', 'billing', '--password-stdin', '--data-dir', dataDir],
        'billing-password-1',
      );
      for (let round = 0; round < 3; round++) {
        const created = await killDuringLoad(dataDir, [], `r${round}`);
        assert.ok(created.length > 0, 'some accounts were created before the kill');
        await storeHas(dataDir, created);
      }
      const integrity = execFileSync(process.execPath, [
        '-e',
        `const { DatabaseSync } = require('node:sqlite'); console.log(new DatabaseSync(${JSON.stringify(join(dataDir, 'berth.db'))}).prepare('PRAGMA integrity_check').get().integrity_check)`,
      ]);
      assert.equal(String(integrity).trim(), 'ok');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('leaves, after a restart, each account whole on the system or no trace of it, with the linux driver', async () => {
    const dataDir = tempDir('berth-crash-linux-');
    const root = makeSystemRoot();
    const settings = [
      'shared_ipv4 = "127.0.0.1"',
      'shared_ipv6 = ""',
      '[linux]',
      `http_port = ${20080 + (process.pid % 500)}`,
    ];
    writeFileSync(join(dataDir, 'berth.toml'), `${settings.join('\n')}\n`);
    const extra = ['--driver', 'linux', '--system-root', root];
    try {
      await berth(
        ['api-user', 'create', 'billing', '--password-stdin', '--data-dir', dataDir],
        'billing-password-1',
      );
      let recovered = 0;
      for (let round = 0; round < 3; round++) {
        const created = await killDuringLoad(dataDir, extra, `l${round}`);
        // The restart finishes what the killed calls left half done.
        const restarted: Served = await serve(dataDir, extra);
        await restarted.stop('SIGTERM');
        recovered += restarted.output().split('recovered an interrupted call').length - 1;
        const doctor = await berth([
          'doctor',
          '--driver',
          'linux',
          '--system-root',
          root,
          '--data-dir',
          dataDir,
        ]);
        assert.equal(doctor.code, 0, `round ${round}: ${doctor.stdout}${doctor.stderr}`);
        await storeHas(dataDir, created);
        for (const user of created) assert.ok(findSystemUser(root, user), `${user} has no system user`);
      }
      // Ten calls in flight at each kill: some were caught half-way, and recovery finished them.
      assert.ok(recovered > 0, 'no kill landed during a call');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('a full disk', () => {
  it('answers 500, writes nothing half, and goes on when space returns', async () => {
    const mountPoint = tempDir('berth-full-');
    execFileSync('/usr/bin/mount', ['-t', 'tmpfs', '-o', 'size=12m', 'tmpfs', mountPoint]);
    const dataDir = join(mountPoint, 'data');
    mkdirSync(dataDir);
    let server: Served | undefined;
    try {
      await berth(
        ['api-user', 'create', 'billing', '--password-stdin', '--data-dir', dataDir],
        'billing-password-1',
      );
      server = await serve(dataDir);
      const create = (user: string) =>
        post(dataDir, server!.adminPort, '/api/v1/createacct/', {
          headers: FORM,
          body: `apiuser=billing&apiauth=billing-password-1&user=${user}&domain=${user}.example&email=a%40example.com&package=default`,
        });
      assert.equal((await create('before')).status, 200);
      // Fill what is left.
      const filler = join(mountPoint, 'filler');
      const fd = openSync(filler, 'w');
      const block = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) writeSync(fd, block);
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
      } finally {
        closeSync(fd);
      }
      const users: string[] = [];
      for (let i = 0; i < 5; i++) {
        const reply = await create(`full${i}`);
        if (reply.status === 200) users.push(`full${i}`);
        else assert.equal(reply.status, 500, reply.body);
      }
      assert.ok(users.length < 5, 'the disk was full but every call succeeded');
      const summary = await post(dataDir, server.adminPort, '/api/v1/get_current_users_count/', {
        headers: FORM,
        body: 'apiuser=billing&apiauth=billing-password-1',
      });
      assert.deepEqual(JSON.parse(summary.body).data, { users: 1 + users.length });
      rmSync(filler);
      assert.equal((await create('after')).status, 200);
      await server.stop('SIGTERM');
      server = undefined;
      await storeHas(dataDir, ['before', 'after', ...users]);
    } finally {
      await server?.stop('SIGKILL');
      execFileSync('/usr/bin/umount', [mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    }
  });
});
