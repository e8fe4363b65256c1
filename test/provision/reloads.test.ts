// A burst of changes shares a service's reloads: one runs at a time, and every caller is answered
// by a reload that began after its change was written (or, having written nothing, after it asked).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { coalesceReloads, type Service } from '../../src/provision/linux/context.ts';

/** A service whose reloads each wait for the test to end them; `started` counts them. */
function gatedService(order: string[] = []) {
  const gates: PromiseWithResolvers<void>[] = [];
  const service: Service & { started: number; finish(error?: Error): void } = {
    name: 'gated',
    started: 0,
    reload() {
      service.started++;
      order.push('reload begins');
      const gate = Promise.withResolvers<void>();
      gates.push(gate);
      return gate.promise;
    },
    finish(error) {
      const gate = gates.shift()!;
      order.push('reload ends');
      if (error) gate.reject(error);
      else gate.resolve();
    },
  };
  coalesceReloads(service);
  return service;
}

/** A write to the service's files that notes its beginning and end, ending when `gate` settles. */
const writer = (service: Service, order: string[]) => (name: string, gate?: Promise<void>) =>
  service.writing!(async () => {
    order.push(`${name} begins`);
    await gate;
    order.push(`${name} ends`);
  });

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A write `a` under way, held until `slowWrite` resolves, and a reload asked for meanwhile. */
async function reloadAskedDuringSlowWrite() {
  const order: string[] = [];
  const service = gatedService(order);
  const write = writer(service, order);
  const slowWrite = Promise.withResolvers<void>();
  const first = write('a', slowWrite.promise);
  await tick();
  return { order, service, write, slowWrite, first, reload: service.reload() };
}

describe('coalesced reloads', () => {
  it('serve a burst with two reloads, each caller answered by one that started after it asked', async () => {
    const service = gatedService();
    const answered: number[] = [];
    const call = (n: number) => service.reload().then(() => answered.push(n));
    const first = call(0);
    const burst = Array.from({ length: 20 }, (_, n) => call(n + 1));
    await tick();
    assert.equal(service.started, 1);
    service.finish();
    await first;
    await tick();
    // The first reload may have read the files before the burst wrote them: it answers only call 0.
    assert.deepEqual(answered, [0]);
    assert.equal(service.started, 2);
    const late = call(99);
    service.finish();
    await Promise.all(burst);
    assert.equal(answered.length, 21);
    await tick();
    assert.equal(service.started, 3, 'a call during the second reload waits for a third');
    service.finish();
    await late;
    assert.equal(service.started, 3);
  });

  it('answer a burst written during one reload by the next alone, even when they ask after it began', {
    timeout: 5000,
  }, async () => {
    const service = gatedService();
    const first = service.reload();
    await tick();
    assert.equal(service.started, 1);
    // Twenty calls write while reload 1 runs: they wait for it, and reload 2 will read them all.
    const writes = Array.from({ length: 20 }, () => service.writing!(async () => {}));
    await tick();
    service.finish();
    await first;
    const carried = await Promise.all(writes);
    assert.deepEqual(new Set(carried.map((w) => w.carriedBy)), new Set([2]));
    const answered: number[] = [];
    const call = (n: number) => service.reloadCarrying!(2).then(() => answered.push(n));
    const calls = [call(0)];
    await tick();
    assert.equal(service.started, 2);
    // The others ask only once reload 2 has begun (their other steps took longer): it still carries them.
    const late = service.writing!(async () => {});
    calls.push(...Array.from({ length: 19 }, (_, n) => call(n + 1)));
    await tick();
    service.finish();
    await Promise.all(calls);
    assert.equal(answered.length, 20);
    assert.equal(service.started, 2, 'no reload beyond the one that read the burst');
    // A write made during reload 2 waited for it, and is read by reload 3.
    assert.equal((await late).carriedBy, 3);
    const third = service.reloadCarrying!(3);
    await tick();
    assert.equal(service.started, 3);
    service.finish();
    await third;
    // A change already read by a reload that ended well needs none.
    await service.reloadCarrying!(3);
    assert.equal(service.started, 3);
  });

  it('fail the callers of the reload that was to carry their change, and start afresh for the next', {
    timeout: 5000,
  }, async () => {
    const service = gatedService();
    const { carriedBy } = await service.writing!(async () => {});
    assert.equal(carriedBy, 1);
    const first = service.reloadCarrying!(carriedBy);
    await tick();
    service.finish(new Error('nginx -t failed'));
    await assert.rejects(first, /nginx -t failed/);
    await tick();
    // Reload 1 did not take the change: asking again begins reload 2.
    const again = service.reloadCarrying!(carriedBy);
    await tick();
    assert.equal(service.started, 2);
    service.finish();
    await again;
  });

  it('fail every caller of a failed reload, and start afresh after it', async () => {
    const service = gatedService();
    const first = service.reload();
    const waiting = service.reload();
    service.finish(new Error('nginx -t failed'));
    await assert.rejects(first, /nginx -t failed/);
    await tick();
    service.finish(new Error('still failing'));
    await assert.rejects(waiting, /still failing/);
    const after = service.reload();
    assert.equal(service.started, 3);
    service.finish();
    await after;
  });

  it("keep a service's files still while it reloads: writes wait for the reload, and it for them", {
    timeout: 5000,
  }, async () => {
    const { order, service, write, slowWrite, first, reload } = await reloadAskedDuringSlowWrite();
    // A write asked for while the reload waits to start goes first: the reload carries it too.
    const early = write('b');
    await tick();
    assert.equal(service.started, 0, 'the reload waits for the writes under way');
    slowWrite.resolve();
    await Promise.all([first, early]);
    await tick();
    assert.equal(service.started, 1);
    const late = write('c');
    await tick();
    service.finish();
    await Promise.all([reload, late]);
    // A write asked for while the reload runs waits for it.
    assert.deepEqual(order, [
      'a begins',
      'b begins',
      'b ends',
      'a ends',
      'reload begins',
      'reload ends',
      'c begins',
      'c ends',
    ]);
  });

  it('let later writes pass a waiting reload for a moment only: a stream of writes cannot starve it', async () => {
    const { order, service, write, slowWrite, first, reload } = await reloadAskedDuringSlowWrite();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = write('b');
    await tick();
    slowWrite.resolve();
    await first;
    await tick();
    assert.equal(service.started, 1);
    service.finish();
    await Promise.all([reload, late]);
    assert.deepEqual(order, ['a begins', 'a ends', 'reload begins', 'reload ends', 'b begins', 'b ends']);
  });
});
