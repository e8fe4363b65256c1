import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertRefused,
  assertSentence,
  createAccount,
  createChild,
  createReseller,
  errorOf,
  type Harness,
  suiteHarness,
  summary,
} from '../helpers.ts';

async function resellerData(h: Harness, user: string): Promise<Record<string, unknown>> {
  const { accounts } = (await h.call('usagestatistics')).body.data as {
    accounts: Record<string, Record<string, unknown>>;
  };
  return accounts[user]?.reseller_data as Record<string, unknown>;
}

describe('setupreseller', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createAccount(h, 'bob');
    },
  });

  it('makes an account a reseller with unlimited limits by default', async () => {
    const reply = await h.call('setupreseller', { user: 'alice' });
    assertSentence(reply, 'User account converted to reseller alice');
    const acct = await summary(h, 'alice');
    assert.equal(acct.is_reseller, 'yes');
    assert.deepEqual(acct.reseller, { status: 'on', selfown: 'off', alpha: 'off' });
    const data = await resellerData(h, 'alice');
    assert.equal(data.reseller_limt, 'unlimited');
    assert.equal(data.reseller_quota, 'unlimited');
  });

  it('updates only the given limits of a reseller', async () => {
    await h.call('setupreseller', { user: 'alice', reseller_limt: '10', reseller_quota: '500' });
    await h.call('setupreseller', { user: 'alice', reseller_bandwidth: '900' });
    const data = await resellerData(h, 'alice');
    assert.deepEqual(
      [data.reseller_limt, data.reseller_quota, data.reseller_bandwidth],
      ['10', '500', '900'],
    );
  });

  it('makes the reseller own itself with selfown=on, and gives it back with selfown=off', async () => {
    await h.call('setupreseller', { user: 'alice', selfown: 'on' });
    let acct = await summary(h, 'alice');
    assert.equal(acct.owner, 'alice');
    assert.deepEqual(acct.reseller, { status: 'on', selfown: 'on', alpha: 'off' });
    await h.call('setupreseller', { user: 'alice', selfown: 'off' });
    acct = await summary(h, 'alice');
    assert.equal(acct.owner, 'root');
  });

  it('refuses missing, unknown and malformed values', async () => {
    assertRefused(await h.call('setupreseller'), 400, 'missing_parameter', 'user');
    assert.deepEqual(errorOf(await h.call('setupreseller', { user: 'ghost' })).code, 'account_not_found');
    assertRefused(
      await h.call('setupreseller', { user: 'bob', reseller_limt: 'many' }),
      400,
      'invalid_parameter',
      'reseller_limt',
    );
  });

  it('under a reseller: needs alpha, never grants alpha or selfown, never on itself', async () => {
    const carol = await createChild(h, 'alice', 'carol', { quota: '10', bandwidth: '10' });
    assert.equal(carol.statusCode, 200);
    assert.deepEqual(errorOf(await h.callAs('alice', 'setupreseller', { user: 'carol' })).code, 'forbidden');
    await h.call('setupreseller', { user: 'alice', alpha: 'on' });
    assert.equal((await h.callAs('alice', 'setupreseller', { user: 'carol' })).statusCode, 200);
    assert.equal(
      errorOf(await h.callAs('alice', 'setupreseller', { user: 'carol', alpha: 'on' })).code,
      'forbidden',
    );
    assert.equal(
      errorOf(await h.callAs('alice', 'setupreseller', { user: 'carol', selfown: 'on' })).code,
      'forbidden',
    );
    assert.equal(
      errorOf(await h.callAs('alice', 'setupreseller', { user: 'alice', reseller_limt: '1000' })).code,
      'forbidden',
    );
    assert.equal(
      errorOf(await h.callAs('alice', 'setupreseller', { user: 'bob' })).code,
      'account_not_found',
    );
  });
});

describe('terminatereseller', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'res');
      await createChild(h, 'res', 'kid');
      await createAccount(h, 'plain');
    },
  });

  it('removes reseller status and passes its accounts to its own owner', async () => {
    const reply = await h.call('terminatereseller', { user: 'res' });
    assertSentence(reply, 'Reseller privileges removed from res');
    assert.equal((await summary(h, 'res')).is_reseller, 'no');
    assert.equal((await summary(h, 'kid')).owner, 'root');
  });

  it('passes the accounts of a self-owned reseller to the owner it had before', async () => {
    await createReseller(h, 'boss');
    await h.call('setupreseller', { user: 'boss', alpha: 'on' });
    await createChild(h, 'boss', 'mid', { reseller: 'on' });
    await h.call('setupreseller', { user: 'mid', selfown: 'on' });
    await createChild(h, 'mid', 'leaf');
    assert.equal((await summary(h, 'mid')).owner, 'mid');
    await h.call('terminatereseller', { user: 'mid' });
    assert.equal((await summary(h, 'mid')).owner, 'boss');
    assert.equal((await summary(h, 'leaf')).owner, 'boss');
  });

  it('refuses an account that is no reseller, and unknown ones', async () => {
    assertRefused(await h.call('terminatereseller', { user: 'plain' }), 400, 'not_reseller', 'user');
    assert.deepEqual(errorOf(await h.call('terminatereseller', { user: 'ghost' })).code, 'account_not_found');
    assert.deepEqual(errorOf(await h.call('terminatereseller')).code, 'missing_parameter');
  });

  it('under a reseller: needs alpha and never on itself', async () => {
    await createReseller(h, 'top');
    await h.call('setupreseller', { user: 'top', selfown: 'on' });
    await createChild(h, 'top', 'sub');
    await h.call('setupreseller', { user: 'sub' });
    assert.equal(errorOf(await h.callAs('top', 'terminatereseller', { user: 'sub' })).code, 'forbidden');
    await h.call('setupreseller', { user: 'top', alpha: 'on' });
    assert.equal(errorOf(await h.callAs('top', 'terminatereseller', { user: 'top' })).code, 'forbidden');
    assert.equal((await h.callAs('top', 'terminatereseller', { user: 'sub' })).statusCode, 200);
  });
});
