import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAccount, createChild, createReseller, suiteHarness } from '../helpers.ts';

describe('get_current_users_count and get_current_reseller_count', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res');
      await h.call('setupreseller', { user: 'res', alpha: 'on' });
      await createChild(h, 'res', 'kid');
      await createChild(h, 'res', 'subres', { reseller: 'on' });
    },
  });

  it('count every account and every reseller for the administrator', async () => {
    assert.deepEqual((await h.call('get_current_users_count')).body, {
      data: { users: 4 },
      info: '4 account(s)',
      status: 200,
    });
    assert.deepEqual((await h.call('get_current_reseller_count')).body.data, { reseller: 2 });
  });

  it("count only the reseller's scope under a reseller", async () => {
    assert.deepEqual((await h.callAs('res', 'get_current_users_count')).body.data, { users: 2 });
    assert.deepEqual((await h.callAs('res', 'get_current_reseller_count')).body.data, { reseller: 1 });
  });

  it('count the reseller itself once it owns itself', async () => {
    await h.call('setupreseller', { user: 'res', selfown: 'on' });
    assert.deepEqual((await h.callAs('res', 'get_current_users_count')).body.data, { users: 3 });
    assert.deepEqual((await h.callAs('res', 'get_current_reseller_count')).body.data, { reseller: 2 });
  });
});
