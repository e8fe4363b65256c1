// Uids given once across the fleet (CONTRACT §10): each account gets one no account ever had, a
// removed account's is not given again, and a server raises the mark above the ids its system has.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { settleUids } from '../../src/operations/maintenance.ts';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import {
  callCreateacct,
  createAccount,
  type Harness,
  recordingDriver,
  setup,
  suiteHarness,
} from '../helpers.ts';

const uidOf = async (h: Harness, user: string) => (await findAccount(h.services.store.db, user))?.uid;

describe('uids', () => {
  let h: Harness;
  const driver = recordingDriver();
  let systemIds = { users: new Map<string, number>(), ids: [] as number[] };
  before(async () => {
    h = await setup({}, { driver: { ...driver, systemIds: () => systemIds } });
  });
  after(() => h.close());

  it('createacct gives each account the next uid from uid_min, and a removed account’s is never given again', async () => {
    await createAccount(h, 'alice');
    await createAccount(h, 'bob');
    assert.equal(await uidOf(h, 'alice'), 10000);
    assert.equal(await uidOf(h, 'bob'), 10001);
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    await createAccount(h, 'alice');
    assert.equal(await uidOf(h, 'alice'), 10002);
  });

  it('concurrent createacct calls never share a uid', async () => {
    const users = Array.from({ length: 8 }, (_, i) => `many${i}`);
    await Promise.all(users.map((user) => createAccount(h, user)));
    const uids = await Promise.all(users.map((user) => uidOf(h, user)));
    assert.equal(new Set(uids).size, users.length);
    assert.ok(uids.every((uid) => uid !== undefined && uid !== null && uid > 10002));
  });

  it('a refused createacct takes no uid', async () => {
    const reply = await callCreateacct(h, 'carol', { domain: 'bob.example.com', email: 'c@example.org' });
    assert.equal(reply.statusCode, 400);
    await createAccount(h, 'carol');
    assert.equal(await uidOf(h, 'carol'), 10011);
  });

  it('at start, a server raises the mark above the ids its system has in the range, and records the uids of older accounts', async () => {
    const old = (await findAccount(h.services.store.db, 'bob'))!;
    await saveAccount(h.services.store.db, { ...old, uid: null });
    systemIds = { users: new Map([['bob', 1001]]), ids: [0, 33, 1001, 10500, 65534] };
    await settleUids(h.services);
    assert.equal(await uidOf(h, 'bob'), 1001);
    await createAccount(h, 'dave');
    assert.equal(await uidOf(h, 'dave'), 10501);
  });
});

describe('the uid range', () => {
  const h = suiteHarness({ config: { uids: { min: 20000, max: 20001 } }, driver: recordingDriver() });

  it('starts at uid_min and, once used up, refuses createacct with nothing made', async () => {
    await createAccount(h, 'alice');
    await createAccount(h, 'bob');
    assert.deepEqual([await uidOf(h, 'alice'), await uidOf(h, 'bob')], [20000, 20001]);
    const reply = await callCreateacct(h, 'carol', { email: 'c@example.org' });
    assert.equal(reply.statusCode, 500);
    assert.equal(await findAccount(h.services.store.db, 'carol'), undefined);
  });
});
