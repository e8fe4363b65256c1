// Events: signed webhooks with retries, executables in the hooks directory, veto hooks, and the
// outbox that sends nothing for a change that was rolled back.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertRefused, callCreateacct, type Harness, recordingDriver, setup } from './helpers.ts';

const SECRET = 'webhook-secret-0123456789';

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

describe('events', () => {
  const driver = recordingDriver();
  const received: Received[] = [];
  let answer: (res: ServerResponse) => void = (res) => res.end('ok');
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      answer(res);
    });
  });
  let h: Harness;
  const until = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 25));
    assert.ok(check(), 'waited in vain');
  };
  const account = (user: string) => ({
    user,
    domain: `${user}.example`,
    email: 'a@example.com',
    package: 'default',
    password: 'Secret-password-9',
  });

  before(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/berth`;
    h = await setup({ webhooks: [{ url, secret: SECRET, events: [] }] }, { driver });
  });
  after(async () => {
    await h.close();
    receiver.closeAllConnections();
    receiver.close();
  });

  it('POSTs a signed event to the webhook after the call has answered', async () => {
    assert.equal((await h.call('createacct', account('alice'))).statusCode, 200);
    await until(() => received.length === 1);
    const [delivery] = received;
    assert.equal(delivery!.headers['berth-event'], 'account.created');
    const [, t, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(delivery!.headers['berth-signature'])) ?? [];
    assert.equal(v1, createHmac('sha256', SECRET).update(`${t}.${delivery!.body}`).digest('hex'));
    const event = JSON.parse(delivery!.body);
    assert.equal(event.type, 'account.created');
    assert.equal(event.account, 'alice');
    assert.equal(event.api_user, 'billing');
    assert.equal(event.data.domain, 'alice.example');
    assert.ok(!delivery!.body.includes('Secret-password-9'));
    assert.equal(delivery!.headers['berth-delivery'], event.id);
  });

  it('retries a failed delivery with a growing wait, keeping the log', async () => {
    received.length = 0;
    let failures = 1;
    answer = (res) => {
      if (failures-- > 0) {
        res.statusCode = 503;
        res.end('busy');
      } else res.end('ok');
    };
    await h.call('suspendacct', { user: 'alice', reason: 'Unpaid' });
    await until(() => received.length === 1);
    const { db } = h.services.store;
    const undelivered = () =>
      db.selectFrom('deliveries').selectAll().where('delivered_ms', 'is', null).execute();
    // The failure is recorded a moment after the receiver has answered.
    for (let i = 0; i < 200 && Number((await undelivered())[0]?.attempts) !== 1; i++) await sleep(25);
    const pending = await undelivered();
    assert.equal(pending.length, 1);
    assert.equal(Number(pending[0]!.attempts), 1);
    assert.equal(pending[0]!.last_error, 'answered 503');
    assert.ok(Number(pending[0]!.next_attempt_ms) > Date.now() + 500);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    h.services.dispatcher.poke();
    await until(() => received.length === 2);
    // The second answer is recorded a moment after the receiver has it.
    for (let i = 0; i < 200 && (await undelivered()).length > 0; i++) await sleep(25);
    assert.deepEqual(await undelivered(), []);
    answer = (res) => res.end('ok');
  });

  it('never holds up the call: a webhook that does not answer does not delay it', async () => {
    received.length = 0;
    const waiting: ServerResponse[] = [];
    answer = (res) => waiting.push(res);
    const reply = await h.call('unsuspendacct', { user: 'alice' });
    assert.equal(reply.statusCode, 200);
    await until(() => received.length === 1);
    assert.equal(waiting.length, 1, 'the webhook still holds the request');
    for (const res of waiting) res.end('ok');
    answer = (res) => res.end('ok');
  });

  it('runs the executables of the hooks directory with the event on standard input', async () => {
    const out = join(h.dataDir, 'hook-output.json');
    mkdirSync(join(h.dataDir, 'hooks'), { recursive: true });
    writeFileSync(
      join(h.dataDir, 'hooks', 'record'),
      `#!/bin/sh\ncat > ${out}\necho "$BERTH_EVENT" >> ${out}.type\n`,
    );
    chmodSync(join(h.dataDir, 'hooks', 'record'), 0o755);
    writeFileSync(join(h.dataDir, 'hooks', 'README'), 'not executable: never run');
    await h.call('changepackage', { user: 'alice', package: 'default' });
    await until(() => {
      try {
        return (
          JSON.parse(readFileSync(out, 'utf8')).type === 'account.package_changed' &&
          readFileSync(`${out}.type`, 'utf8').endsWith('\n')
        );
      } catch {
        return false;
      }
    });
    assert.equal(readFileSync(`${out}.type`, 'utf8').trim(), 'account.package_changed');
    rmSync(join(h.dataDir, 'hooks', 'record'));
  });

  it('lets a veto hook refuse a vetoable call before it acts', async () => {
    const dir = join(h.dataDir, 'hooks', 'pre-createacct');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'capacity'), '#!/bin/sh\necho "no capacity left on this node" >&2\nexit 1\n');
    chmodSync(join(dir, 'capacity'), 0o755);
    driver.log.length = 0;
    const refused = await h.call('createacct', account('vetoed'));
    assertRefused(refused, 403, 'forbidden', undefined);
    assert.match(refused.body.info, /refused by the hook capacity: no capacity left on this node/);
    assert.deepEqual(driver.log, []);
    rmSync(dir, { recursive: true });
    assert.equal((await h.call('createacct', account('vetoed'))).statusCode, 200);
  });

  it('records no event for a change that was rolled back, nor for reads', async () => {
    const { db } = h.services.store;
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();
    driver.failAt = 'create:third';
    assert.equal((await h.call('createacct', account('rolledback'))).statusCode, 500);
    driver.failAt = null;
    await h.call('listaccts');
    await h.call('accountsummary', { user: 'alice' });
    assert.equal(await count(), before);
  });
});

describe('the delivery log', () => {
  it('is printed by berth events', async () => {
    const { berth } = await import('./process.ts');
    const h = await setup({
      webhooks: [{ url: 'http://127.0.0.1:9/nowhere', secret: SECRET, events: ['account.created'] }],
    });
    try {
      await callCreateacct(h, 'logged', { domain: 'logged.example', email: 'a@example.com' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const result = await berth(['events', '--json', '--data-dir', h.dataDir]);
      assert.equal(result.code, 0, result.stderr);
      const [event] = JSON.parse(result.stdout) as {
        type: string;
        account: string;
        deliveries: { target: string; attempts: number; error: string }[];
      }[];
      assert.equal(event?.type, 'account.created');
      assert.equal(event?.account, 'logged');
      assert.equal(event?.deliveries[0]?.target, 'webhook:http://127.0.0.1:9/nowhere');
      assert.equal(event?.deliveries[0]?.attempts, 1);
      assert.ok(event?.deliveries[0]?.error);
    } finally {
      await h.close();
    }
  });
});
