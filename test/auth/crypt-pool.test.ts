import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CryptPool } from '../../src/auth/crypt-pool.ts';
import { verifySha512Crypt } from '../../src/auth/sha512-crypt.js';

describe('the hashing pool', () => {
  it('hashes and verifies in worker threads while the event loop keeps turning', async () => {
    const pool = new CryptPool(2);
    try {
      let turns = 0;
      let spinning = true;
      const spin = () => {
        turns++;
        if (spinning) setImmediate(spin);
      };
      setImmediate(spin);
      const hashes = await Promise.all(Array.from({ length: 8 }, (_, i) => pool.hash(`password-${i}`)));
      spinning = false;
      // Eight hashes take tens of milliseconds of CPU; had they run on the loop, it could not have turned.
      assert.ok(turns > 8, `the event loop turned only ${turns} times`);
      for (const [i, hash] of hashes.entries()) assert.equal(verifySha512Crypt(`password-${i}`, hash), true);
      assert.equal(await pool.verify('password-0', hashes[0]!), true);
      assert.equal(await pool.verify('password-1', hashes[0]!), false);
      assert.equal(await pool.verify('password-0', '*'), false);
    } finally {
      await pool.close();
    }
  });

  it('starts a worker only when a hash would wait, and never more than its size', async () => {
    const pool = new CryptPool(2);
    try {
      assert.equal(pool.started, 0);
      const hash = await pool.hash('password-0');
      assert.equal(pool.started, 1);
      assert.equal(await pool.verify('password-0', hash), true);
      assert.equal(pool.started, 1, 'an idle worker is used again');
      await Promise.all(Array.from({ length: 8 }, (_, i) => pool.hash(`password-${i}`)));
      assert.equal(pool.started, 2);
    } finally {
      await pool.close();
    }
  });
});
