// At most so many tasks at once (wait.ts limiter, used for PHP masters started on requests): each
// task runs, in the order they came, and a task that fails frees its slot.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { limiter } from '../../src/provision/linux/wait.ts';

describe('limiter', () => {
  it('never runs more than its slots at once, runs every task, and starts them in order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.record({ ms: fc.integer({ min: 0, max: 3 }), fails: fc.boolean() }), { maxLength: 20 }),
        async (slots, tasks) => {
          const limit = limiter(slots);
          let running = 0;
          let most = 0;
          const started: number[] = [];
          const results = await Promise.allSettled(
            tasks.map((task, i) =>
              limit.run(async () => {
                started.push(i);
                running++;
                most = Math.max(most, running);
                await sleep(task.ms);
                running--;
                if (task.fails) throw new Error(`task ${i}`);
                return i;
              }),
            ),
          );
          assert.ok(most <= slots, `${most} ran at once with ${slots} slots`);
          assert.deepEqual(
            started,
            tasks.map((_, i) => i),
          );
          results.forEach((result, i) => {
            assert.equal(result.status, tasks[i]!.fails ? 'rejected' : 'fulfilled');
          });
        },
      ),
      { numRuns: 50 },
    );
  });
});
