// What a server answers the fleet's other servers (src/fleet/routes.ts): nothing without the
// fleet's signature, fresh and over the exact bytes; a change for an account it does not hold is
// refused; a signed question is answered.
import assert from 'node:assert/strict';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FLEET_PATHS } from '../../src/fleet/calls.ts';
import { signedHeaders } from '../../src/fleet/client.ts';
import { FLEET_BODY_LIMIT } from '../../src/fleet/routes.ts';
import { type Principal, principalMessage } from '../../src/operations/principal.ts';
import { changeMessage } from '../../src/provision/changes.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { mainObjects } from '../../src/store/objects.ts';
import { createAccount, type Harness, recordingDriver, setup } from '../helpers.ts';

/** A request from the fleet's server web2 to web1, the server under test. */
const TO_WEB1 = { from: 'web2', to: 'web1' };

describe('requests between the servers of a fleet', () => {
  let h: Harness;
  let secret: string;
  const driver = recordingDriver();
  before(async () => {
    h = await setup({ nodeName: 'web1' }, { driver });
    await h.services.fleet.ensureSecret();
    secret = (await h.services.fleet.secret())!;
  });
  after(() => h.close());

  const send = (path: string, body: string, headers: Record<string, string>) =>
    h.request({ url: path, headers: { 'content-type': 'application/json', ...headers }, body });
  /** Sends as another server of the fleet would: signed with the fleet's secret, for web1. */
  const sendSigned = (path: string, body: string) =>
    send(path, body, signedHeaders(secret, TO_WEB1, path, body));

  it('refuses a request without the signature, with a wrong or stale one, or over other bytes', async () => {
    const body = JSON.stringify({ user: 'alice' });
    const path = FLEET_PATHS.nameTaken;
    const refused = [
      {},
      signedHeaders('not-the-fleet-secret', TO_WEB1, path, body),
      signedHeaders(secret, TO_WEB1, path, body, Date.now() - 120_000),
      signedHeaders(secret, TO_WEB1, path, JSON.stringify({ user: 'bob' })),
      signedHeaders(secret, TO_WEB1, FLEET_PATHS.settle, body),
    ];
    for (const headers of refused) {
      const reply = await send(path, body, headers);
      assert.equal(reply.statusCode, 401, JSON.stringify(headers));
    }
    const answered = await sendSigned(path, body);
    assert.equal(answered.statusCode, 200);
    assert.deepEqual(answered.body, { taken: false });
  });

  it('refuses a captured request sent again, however soon, and answers each fresh one', async () => {
    const body = JSON.stringify({ user: 'alice' });
    const path = FLEET_PATHS.nameTaken;
    const captured = signedHeaders(secret, TO_WEB1, path, body);
    assert.equal((await send(path, body, captured)).statusCode, 200);
    const replayed = await send(path, body, captured);
    assert.equal(replayed.statusCode, 401);
    // A change replayed would act twice: the steps of a suspension, say.
    await createAccount(h, 'replayed');
    const account = (await findAccount(h.services.store.db, 'replayed'))!;
    const transaction = crypto.randomUUID();
    const text = JSON.stringify({
      transaction,
      change: changeMessage({ kind: 'suspend', account, objects: mainObjects(account) }),
    });
    const steps = signedHeaders(secret, TO_WEB1, FLEET_PATHS.steps, text);
    assert.equal((await send(FLEET_PATHS.steps, text, steps)).statusCode, 200);
    driver.log.length = 0;
    assert.equal((await send(FLEET_PATHS.steps, text, steps)).statusCode, 401);
    assert.deepEqual(driver.log, [], 'nothing ran again');
    const settle = JSON.stringify({ transaction, outcome: 'undo' });
    const undone = await sendSigned(FLEET_PATHS.settle, settle);
    assert.equal(undone.statusCode, 200);
    // Each request of the fleet has a nonce of its own, and is answered.
    for (let i = 0; i < 3; i++) assert.equal((await sendSigned(path, body)).statusCode, 200);
  });

  it('refuses a request signed for another server of the fleet, or whose target or nonce was changed', async () => {
    const body = JSON.stringify({ user: 'alice' });
    const path = FLEET_PATHS.nameTaken;
    const forWeb3 = signedHeaders(secret, { from: 'web2', to: 'web3' }, path, body);
    assert.equal((await send(path, body, forWeb3)).statusCode, 401, 'signed for web3');
    const retargeted = { ...forWeb3, 'x-berth-target': 'web1' };
    assert.equal((await send(path, body, retargeted)).statusCode, 401, 'target changed');
    const fresh = signedHeaders(secret, TO_WEB1, path, body);
    const renonced = { ...fresh, 'x-berth-nonce': 'ab'.repeat(16) };
    assert.equal((await send(path, body, renonced)).statusCode, 401, 'nonce changed');
    for (const nonce of ['', 'short', 'zz'.repeat(16), 'ab'.repeat(17)]) {
      const headers = signedHeaders(secret, TO_WEB1, path, body, Date.now(), nonce);
      assert.equal((await send(path, body, headers)).statusCode, 401, `nonce "${nonce}"`);
    }
    const withoutNonce: Record<string, string> = { ...fresh };
    delete withoutNonce['x-berth-nonce'];
    assert.equal((await send(path, body, withoutNonce)).statusCode, 401, 'no nonce');
    assert.equal((await send(path, body, fresh)).statusCode, 200, 'the untouched request');
  });

  it('refuses a change for an account it does not hold, and one that is not a change', async () => {
    await createAccount(h, 'alice');
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    const path = FLEET_PATHS.steps;
    const elsewhere = JSON.stringify({
      transaction: crypto.randomUUID(),
      change: changeMessage({
        kind: 'suspend',
        account: { ...alice, server: 'web2' },
        objects: mainObjects(alice),
      }),
    });
    const notHere = await sendSigned(path, elsewhere);
    assert.equal(notHere.statusCode, 409);
    for (const bad of [
      {
        transaction: 'x',
        change: changeMessage({ kind: 'suspend', account: alice, objects: mainObjects(alice) }),
      },
      { transaction: crypto.randomUUID(), change: { kind: 'format-disk', account: {} } },
      {
        transaction: crypto.randomUUID(),
        change: {
          kind: 'password',
          account: changeMessage({ kind: 'suspend', account: alice, objects: mainObjects(alice) }).account,
        },
      },
    ]) {
      const text = JSON.stringify(bad);
      const reply = await sendSigned(path, text);
      assert.equal(reply.statusCode, 400, text);
    }
  });

  it('runs a signed change for its own account, keeps its steps open and undoes them when told', async () => {
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    const transaction = crypto.randomUUID();
    const text = JSON.stringify({
      transaction,
      change: changeMessage({ kind: 'suspend', account: alice, objects: mainObjects(alice) }),
    });
    const ran = await sendSigned(FLEET_PATHS.steps, text);
    assert.equal(ran.statusCode, 200);
    assert.equal(h.services.journal.pending().length, 1, 'kept open, journalled');
    driver.log.length = 0;
    const settle = JSON.stringify({ transaction, outcome: 'undo' });
    const settled = await sendSigned(FLEET_PATHS.settle, settle);
    assert.equal(settled.statusCode, 200);
    assert.equal(h.services.journal.pending().length, 0);
    assert.deepEqual(driver.log, [
      'undo suspend:third alice',
      'undo suspend:second alice',
      'undo suspend:first alice',
    ]);
  });

  it('carries the principal of the call with a change, and refuses one outside its scope', async () => {
    await createAccount(h, 'bob');
    const { db } = h.services.store;
    const alice = (await findAccount(db, 'alice'))!;
    const bob = (await findAccount(db, 'bob'))!;
    const holder: Principal = {
      kind: 'holder',
      via: 'token',
      account: bob,
      credential: 't1',
      address: '::1',
    };
    const steps = (principal: unknown) => {
      const text = JSON.stringify({
        transaction: crypto.randomUUID(),
        change: changeMessage({ kind: 'suspend', account: alice, objects: mainObjects(alice) }),
        principal,
      });
      return sendSigned(FLEET_PATHS.steps, text);
    };
    driver.log.length = 0;
    const outside = await steps(principalMessage(holder));
    assert.equal(outside.statusCode, 403);
    const forged = await steps({ ...principalMessage(holder), kind: 'admin' });
    assert.equal(forged.statusCode, 400, 'an administrator through a token does not exist');
    assert.deepEqual(driver.log, [], 'nothing ran');
    const own = await steps(principalMessage({ ...holder, account: alice }));
    assert.equal(own.statusCode, 200);
    assert.ok(driver.log.length > 0);
  });

  it('moves nothing for an unsigned caller, and exports only an account it holds', async () => {
    const body = JSON.stringify({ user: 'alice', to: 'web2' });
    for (const path of [FLEET_PATHS.move, FLEET_PATHS.receive, FLEET_PATHS.export, FLEET_PATHS.files]) {
      const reply = await send(path, body, {});
      assert.equal(reply.statusCode, 401, path);
    }
    const exportOf = async (user: string) => {
      const text = JSON.stringify({ user });
      return sendSigned(FLEET_PATHS.export, text);
    };
    // The record driver keeps nothing on the system: there is nothing to hand over but the record.
    const held = await exportOf('alice');
    assert.equal(held.statusCode, 200);
    assert.deepEqual(held.body, { account: null });
    assert.equal((await exportOf('nobody')).statusCode, 409);
    const away = JSON.stringify({ user: 'alice', to: 'web1' });
    const same = await sendSigned(FLEET_PATHS.move, away);
    assert.equal(same.statusCode, 400);
    assert.match(String((same.body as { info: string }).info), /alice is on web1 already/);
  });

  /** A change of an account of `count` mailboxes, each named whole before and after: its bytes. */
  const manyMailboxes = async (count: number) => {
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    const objects = mainObjects(alice);
    const mailboxes = Array.from({ length: count }, (_, i) => ({
      email: `box${i}@${alice.domain}`,
      passwordHash: `$6$${'s'.repeat(16)}$${'h'.repeat(86)}`,
      quota: 1024,
      createdAt: new Date(),
    }));
    const change = {
      kind: 'objects',
      account: alice,
      before: objects,
      objects: { ...objects, mailboxes },
    } as const;
    return JSON.stringify({ transaction: crypto.randomUUID(), change: changeMessage(change) });
  };

  it('takes a change past an API call’s 64 KiB when it claims the fleet’s signature, and none otherwise', async () => {
    const text = await manyMailboxes(300);
    assert.ok(text.length > 64 * 1024);
    const path = FLEET_PATHS.steps;
    const ran = await sendSigned(path, text);
    assert.equal(ran.statusCode, 200, JSON.stringify(ran.body));
    const { transaction } = JSON.parse(text) as { transaction: string };
    await sendSigned(FLEET_PATHS.settle, JSON.stringify({ transaction, outcome: 'undo' }));
    // Without the fleet's headers the body is not read at all; with them but a wrong secret, it is
    // read and refused.
    assert.equal((await send(path, text, {})).statusCode, 413);
    assert.equal(
      (await send(path, text, signedHeaders('not-the-fleet-secret', TO_WEB1, path, text))).statusCode,
      401,
    );
    // Headers for another server, or stale: the body is not read.
    const elsewhere = signedHeaders(secret, { from: 'web2', to: 'web3' }, path, text);
    assert.equal((await send(path, text, elsewhere)).statusCode, 413);
    const stale = signedHeaders(secret, TO_WEB1, path, text, Date.now() - 120_000);
    assert.equal((await send(path, text, stale)).statusCode, 413);
    const huge = JSON.stringify({ pad: 'x'.repeat(FLEET_BODY_LIMIT) });
    assert.equal((await sendSigned(path, huge)).statusCode, 413);
  });

  it('reads at most four of the largest fleet bodies at once, each let go when its connection is cut', async () => {
    await h.admin.listen({ host: '127.0.0.1', port: 0 });
    const { port } = h.admin.server.address() as AddressInfo;
    const path = FLEET_PATHS.nameTaken;
    // Each claims the fleet's signature for this server and the largest body, and sends a little.
    const holding: Socket[] = [];
    for (let i = 0; i < 4; i++) {
      const headers = signedHeaders(secret, TO_WEB1, path, `${i}`);
      const socket = connect({ host: '127.0.0.1', port });
      socket.on('error', () => {});
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: web1\r\nContent-Type: application/json\r\nContent-Length: ${FLEET_BODY_LIMIT}\r\n${lines.join('')}\r\n{`,
      );
      holding.push(socket);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const text = await manyMailboxes(300);
    assert.equal((await sendSigned(FLEET_PATHS.steps, text)).statusCode, 413, 'no room left');
    for (const socket of holding) socket.destroy();
    await new Promise((resolve) => setTimeout(resolve, 200));
    const again = await manyMailboxes(300);
    assert.equal((await sendSigned(FLEET_PATHS.steps, again)).statusCode, 200);
    const { transaction } = JSON.parse(again) as { transaction: string };
    await sendSigned(FLEET_PATHS.settle, JSON.stringify({ transaction, outcome: 'undo' }));
  });
});
