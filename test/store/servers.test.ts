// The fleet's servers in the store: registration, heartbeat and state, drain, the accounts each
// holds, and the guard that keeps a change to an account's system on the account's own server.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimUnplacedAccounts } from '../../src/operations/maintenance.ts';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import {
  DOWN_AFTER_MS,
  heartbeat,
  listServers,
  placeAccounts,
  registerServer,
  setDraining,
  unplacedAccounts,
} from '../../src/store/servers.ts';
import { createAccount, recordingDriver, setup, suiteHarness } from '../helpers.ts';

/** A server as it registers; without TLS, so that no other server could call it. */
function registration(name: string, driver: string) {
  return {
    name,
    advertiseUrl: `https://${name}.example:5555`,
    driver,
    tlsFingerprint: null,
    weight: 1,
    profile: {
      sharedIpv4: '192.0.2.1',
      sharedIpv6: '',
      shell: '/bin/bash',
      homeBase: '/home',
      nameservers: [],
      ipPool: { ipv4: [], ipv6: [], resellerShare: 0.5 },
    },
  };
}

describe('the fleet’s servers', () => {
  const h = suiteHarness({ config: { nodeName: 'web1' }, driver: recordingDriver() });

  it('registers servers, tells up from down by the heartbeat, and keeps a drain across restarts', async () => {
    const { db } = h.services.store;
    const t0 = new Date('2026-11-21T10:00:00Z');
    await registerServer(db, registration('web1', 'record'), t0);
    await registerServer(db, registration('web2', 'linux'), t0);
    await heartbeat(db, 'web1', new Date(t0.getTime() + DOWN_AFTER_MS));
    const later = t0.getTime() + DOWN_AFTER_MS + 1000;
    assert.deepEqual(
      (await listServers(db, later)).map((s) => [s.name, s.state, s.driver]),
      [
        ['web1', 'up', 'record'],
        ['web2', 'down', 'linux'],
      ],
    );
    assert.equal(await setDraining(db, 'web1', true), true);
    assert.equal(await setDraining(db, 'ghost', true), false);
    await registerServer(db, registration('web1', 'record'), new Date(later));
    assert.equal((await listServers(db, later))[0]?.state, 'draining');
    assert.equal(await setDraining(db, 'web1', false), true);
  });

  it('puts a new account on the server that made it, and counts each server’s accounts', async () => {
    const created = await createAccount(h, 'alice');
    assert.equal((created.body.data as { server: string }).server, 'web1');
    const listed = await listServers(h.services.store.db, Date.now());
    assert.equal(listed.find((s) => s.name === 'web1')?.accounts, 1);
  });

  it('lets a server claim only the accounts no server holds', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'bob');
    const bob = (await findAccount(db, 'bob'))!;
    await saveAccount(db, { ...bob, server: null });
    assert.deepEqual(
      (await unplacedAccounts(db)).map((row) => row.user),
      ['bob'],
    );
    await placeAccounts(db, ['bob', 'alice'], 'web2');
    assert.equal((await findAccount(db, 'bob'))?.server, 'web2');
    assert.equal((await findAccount(db, 'alice'))?.server, 'web1');
  });

  it('refuses a change to the system of an account on another server with 503, changing nothing', async () => {
    const reply = await h.call('suspendacct', { user: 'bob', reason: 'Unpaid' });
    assert.equal(reply.statusCode, 503);
    assert.equal((reply.body.data as { code: string }).code, 'node_unavailable');
    assert.equal(reply.headers['retry-after'], '30');
    assert.match(reply.body.info, /The account bob is on the server web2/);
    assert.equal((await findAccount(h.services.store.db, 'bob'))?.suspension, null);
    const removed = await h.call('removeacct', { user: 'bob' });
    assert.equal(removed.statusCode, 503);
    assert.ok(await findAccount(h.services.store.db, 'bob'));
    // Its record reads from any server.
    assert.equal((await h.call('accountsummary', { user: 'bob' })).statusCode, 200);
  });

  it('checks createacct’s server and takes no account when every server is drained', async () => {
    const { db } = h.services.store;
    await registerServer(db, registration('web1', 'record'), new Date());
    const create = (extra: Record<string, string> = {}) =>
      h.call('createacct', {
        user: 'carol',
        domain: 'carol.example',
        email: 'c@example.org',
        package: 'default',
        ...extra,
      });
    for (const [server, reason] of [
      ['ghost', /there is no server named ghost/],
      ['web2', /the server web2 is down/],
      ['Web1', /a server name is/],
    ] as const) {
      const refused = await create({ server });
      assert.equal(refused.statusCode, 400, server);
      assert.match(refused.body.info, reason);
    }
    await setDraining(db, 'web1', true);
    const drained = await create({ server: 'web1' });
    assert.equal(drained.statusCode, 400);
    assert.match(drained.body.info, /web1 is draining/);
    const none = await create();
    assert.equal(none.statusCode, 503);
    assert.equal(none.headers['retry-after'], '30');
    assert.match(none.body.info, /No server of the fleet takes new accounts/);
    assert.equal(await findAccount(db, 'carol'), undefined);
    await setDraining(db, 'web1', false);
    const made = await create({ server: 'web1' });
    assert.equal(made.statusCode, 200);
    assert.equal((made.body.data as { server: string }).server, 'web1');
  });
});

describe('claiming the accounts made before a store had servers', () => {
  it('claims on the linux driver only the accounts whose system user this server has', async () => {
    const driver = recordingDriver();
    const h = await setup({ nodeName: 'web1', driver: 'linux' }, { driver });
    try {
      const { db } = h.services.store;
      for (const user of ['here', 'there']) {
        await createAccount(h, user);
        await saveAccount(db, { ...(await findAccount(db, user))!, server: null });
      }
      driver.nameTaken = async (user) => user === 'here';
      assert.equal(await claimUnplacedAccounts(h.services), 1);
      assert.equal((await findAccount(db, 'here'))?.server, 'web1');
      assert.equal((await findAccount(db, 'there'))?.server, null);
    } finally {
      await h.close();
    }
  });
});
