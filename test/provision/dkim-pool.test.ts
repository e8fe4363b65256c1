// DKIM keys made ahead: each taken once by a rename, the pool refilled off the call's path while
// serving, an empty (or failing) pool no failure; and createacct in a throwaway root signing with a
// key from the pool, which leaves it.
import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { dkimPoolDir } from '../../src/provision/linux/dns/dkim.ts';
import { DkimKeyPool } from '../../src/provision/linux/dns/dkim-pool.ts';
import { createAccount, tempDir } from '../helpers.ts';
import { type LinuxHarness, linuxSetup } from './system-root.ts';

/** The nice value of the thread running this code (the process's main thread). */
function niceOfThisThread(): number {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** Keys numbered in the order made: which one a take gave is plain to see. */
function counting(): { made: () => number; generate: () => Promise<string> } {
  let made = 0;
  return {
    made: () => made,
    generate: async () => {
      made++;
      return `key ${made}\n`;
    },
  };
}

describe('the DKIM key pool', () => {
  let dir: string;
  before(() => {
    dir = tempDir('berth-dkim-pool-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A pool of `size` counted keys, started and filled, in `dir/<name>/.pool`. */
  const filledPool = async (name: string, size: number, quietMs: number) => {
    const keys = counting();
    const pool = new DkimKeyPool(join(dir, name, '.pool'), { size, generate: keys.generate, quietMs });
    pool.start();
    await pool.fill();
    return { keys, pool };
  };

  it('fills to its size once started, root’s alone: a 0700 directory of 0600 keys', async () => {
    const { keys, pool } = await filledPool('fill', 3, 0);
    assert.equal(pool.ready().length, 3);
    assert.equal(keys.made(), 3);
    assert.equal(statSync(join(dir, 'fill', '.pool')).mode & 0o777, 0o700);
    for (const file of pool.ready())
      assert.equal(statSync(join(dir, 'fill', '.pool', file)).mode & 0o777, 0o600);
    await pool.close();
  });

  it('gives each key once, moving it out of the pool, and refills what was taken', async () => {
    const { keys, pool } = await filledPool('take', 3, 0);
    const given: string[] = [];
    for (let i = 0; i < 3; i++) {
      const dest = join(dir, 'take', `domain${i}.private`);
      assert.equal(pool.take(dest), true);
      assert.equal(statSync(dest).mode & 0o777, 0o600);
      given.push(readFileSync(dest, 'utf8'));
    }
    assert.equal(new Set(given).size, 3, 'no key given twice');
    // The takes started a refill: the pool is full again, with none of the keys given.
    await pool.fill();
    const ready = pool.ready().map((file) => readFileSync(join(dir, 'take', '.pool', file), 'utf8'));
    assert.equal(ready.length, 3);
    assert.deepEqual(
      ready.filter((key) => given.includes(key)),
      [],
    );
    assert.equal(keys.made(), 6);
    await pool.close();
  });

  it('answers false when empty, and refills only while serving (a CLI command takes what is there)', async () => {
    const keys = counting();
    const pool = new DkimKeyPool(join(dir, 'empty', '.pool'), {
      size: 2,
      generate: keys.generate,
      quietMs: 0,
    });
    mkdirSync(join(dir, 'empty'), { recursive: true });
    const dest = join(dir, 'empty', 'a.private');
    assert.equal(pool.take(dest), false);
    assert.equal(existsSync(dest), false);
    await pool.fill();
    assert.equal(keys.made(), 0, 'not started: nothing made in the background');
    pool.start();
    await pool.fill();
    assert.equal(pool.take(dest), true);
    await pool.close();
    // Closed: the take after it starts no refill.
    const madeBefore = keys.made();
    while (pool.ready().length > 0) assert.equal(pool.take(join(dir, 'empty', 'b.private')), true);
    await pool.fill();
    assert.equal(pool.ready().length, 0);
    assert.equal(keys.made(), madeBefore);
  });

  it('waits to refill until no key has been taken for a while, and ends that wait when closed', async () => {
    const { keys, pool } = await filledPool('quiet', 2, 400);
    assert.equal(keys.made(), 2, 'nothing taken yet: no wait');
    const takenAt = performance.now();
    assert.equal(pool.take(join(dir, 'quiet', 'a.private')), true);
    await sleep(150);
    assert.equal(keys.made(), 2, 'a key taken a moment ago: none made yet');
    // Another take while it waits: the wait starts again from it.
    const againAt = performance.now();
    assert.equal(pool.take(join(dir, 'quiet', 'b.private')), true);
    await pool.fill();
    assert.equal(keys.made(), 4);
    assert.ok(performance.now() - againAt >= 390, 'made only once the takes had stopped');
    assert.ok(performance.now() - takenAt >= 540);

    assert.equal(pool.take(join(dir, 'quiet', 'c.private')), true);
    const closing = performance.now();
    await pool.close();
    assert.ok(performance.now() - closing < 300, 'closing ends the wait');
    assert.equal(keys.made(), 4);
  });

  it('counts the keys on disk as it refills: keys removed meanwhile are made again', async () => {
    const poolDir = join(dir, 'removed', '.pool');
    const { keys, pool } = await filledPool('removed', 3, 100);
    assert.equal(pool.take(join(dir, 'removed', 'a.private')), true);
    // While the refill waits for quiet, the two keys left go (an administrator, another process).
    for (const file of pool.ready()) rmSync(join(poolDir, file));
    await pool.fill();
    assert.equal(pool.ready().length, 3);
    assert.equal(keys.made(), 6);
    await pool.close();
  });

  it('makes its keys in a thread of its own at nice 19: RSA 2048, PKCS #8', async () => {
    const poolDir = join(dir, 'thread', '.pool');
    const pool = new DkimKeyPool(poolDir, { size: 2, quietMs: 0 });
    const niceBefore = niceOfThisThread();
    pool.start();
    const filled = pool.fill();
    let done = false;
    void filled.finally(() => {
      done = true;
    });
    // The threads of this process with nice 19, looked for while the keys are made.
    let lowest = 0;
    while (!done && lowest === 0) {
      lowest = readdirSync('/proc/self/task').filter((task) => {
        const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
        return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16] === '19';
      }).length;
      await sleep(2);
    }
    await filled;
    await pool.close();
    assert.equal(lowest, 1, 'one thread at nice 19 made the keys');
    assert.equal(niceOfThisThread(), niceBefore, 'the server’s own thread keeps its priority');
    for (const file of pool.ready()) {
      const pem = readFileSync(join(poolDir, file), 'utf8');
      assert.match(pem, /^-----BEGIN PRIVATE KEY-----\n/);
      assert.equal(createPrivateKey(pem).asymmetricKeyDetails?.modulusLength, 2048);
    }
    assert.equal(pool.ready().length, 2);
  });

  it('stops a refill that fails, and takes nothing half written', async () => {
    let calls = 0;
    const pool = new DkimKeyPool(join(dir, 'failing', '.pool'), {
      size: 2,
      quietMs: 0,
      generate: async () => {
        calls++;
        throw new Error('no entropy');
      },
    });
    pool.start();
    await pool.fill();
    assert.equal(calls, 1, 'one failure ends the refill');
    // A key being written is a dot name until it is whole: never taken.
    writeFileSync(join(dir, 'failing', '.pool', '.0123.tmp'), 'half a key');
    assert.equal(pool.take(join(dir, 'failing', 'a.private')), false);
    assert.equal(existsSync(join(dir, 'failing', 'a.private')), false);
    await pool.close();
  });
});

describe('createacct with DKIM keys made ahead (linux driver, throwaway root)', () => {
  let h: LinuxHarness;
  before(async () => {
    h = await linuxSetup();
  });
  after(() => h.close());

  it('signs with a key from the pool, which no longer holds it; an empty pool makes one on the spot', async () => {
    const poolDir = join(h.root, dkimPoolDir('/etc/berth/dkim'));
    const pool = new DkimKeyPool(poolDir, { size: 1, quietMs: 0 });
    pool.start();
    await pool.fill();
    await pool.close();
    const [file] = pool.ready();
    const ready = readFileSync(join(poolDir, file!), 'utf8');
    await createAccount(h, 'alice');
    const keyFile = join(h.root, 'etc/berth/dkim/alice.example.com.private');
    assert.equal(readFileSync(keyFile, 'utf8'), ready);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(poolDir), []);
    const published = createPublicKey(ready).export({ type: 'spki', format: 'der' }).toString('base64');
    const zone = readFileSync(join(h.root, 'etc/bind/zones/alice.example.com.db'), 'utf8');
    assert.ok(zone.replace(/"\s*"/g, '').includes(`p=${published}`), 'the zone publishes the pool’s key');

    await createAccount(h, 'bob');
    const made = readFileSync(join(h.root, 'etc/berth/dkim/bob.example.com.private'), 'utf8');
    assert.notEqual(made, ready);
    assert.equal(createPublicKey(made).asymmetricKeyDetails?.modulusLength, 2048);
  });
});
