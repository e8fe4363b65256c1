import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertRefused,
  assertSentence,
  createAliceAndReseller,
  type Harness,
  recordingDriver,
  suiteHarness,
} from '../helpers.ts';

async function suspended(h: Harness): Promise<Record<string, { reason: string; suspendtime: string }>> {
  return (
    (await h.call('listsuspended')).body.data as {
      accounts: Record<string, { reason: string; suspendtime: string }>;
    }
  ).accounts;
}

describe('suspendacct and unsuspendacct', () => {
  const driver = recordingDriver();
  const h = suiteHarness({
    driver,
    prepare: (h) => createAliceAndReseller(h, 'kid', 'kid2'),
  });

  it('suspends with the seed sentence, records reason and time, and runs the system steps', async () => {
    driver.log.length = 0;
    const reply = await h.call('suspendacct', { user: 'alice', reason: 'Unpaid invoice' });
    assertSentence(reply, 'User account suspended alice');
    assert.equal((await suspended(h)).alice?.reason, 'Unpaid invoice');
    assert.equal(driver.log.length, 3);
    const summary = await h.call('accountsummary', { user: 'alice' });
    assert.equal((summary.body.data as { acct: { is_suspended: string } }).acct.is_suspended, 'yes');
  });

  it('again on a suspended account: 200, time kept, reason replaced only when given', async () => {
    const first = (await suspended(h)).alice!;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    driver.log.length = 0;
    assert.equal((await h.call('suspendacct', { user: 'alice' })).statusCode, 200);
    assert.deepEqual((await suspended(h)).alice, first);
    assert.equal((await h.call('suspendacct', { user: 'alice', reason: 'Abuse' })).statusCode, 200);
    assert.deepEqual((await suspended(h)).alice, { ...first, reason: 'Abuse' });
    assert.deepEqual(driver.log, []);
  });

  it('unsuspends with its sentence, and answers 200 on an active account', async () => {
    const reply = await h.call('unsuspendacct', { user: 'alice' });
    assertSentence(reply, 'User account unsuspended alice');
    assert.deepEqual(await suspended(h), {});
    assert.equal((await h.call('unsuspendacct', { user: 'alice' })).statusCode, 200);
  });

  it('refuses missing and unknown users', async () => {
    for (const op of ['suspendacct', 'unsuspendacct']) {
      assertRefused(await h.call(op), 400, 'missing_parameter', 'user');
      assertRefused(await h.call(op, { user: 'ghost' }), 400, 'account_not_found', 'user');
    }
  });

  it('lets a reseller suspend its own accounts but not itself or others', async () => {
    assert.equal((await h.callAs('res', 'suspendacct', { user: 'kid', reason: 'x' })).statusCode, 200);
    assert.equal((await h.callAs('res', 'unsuspendacct', { user: 'kid' })).statusCode, 200);
    assertRefused(await h.callAs('res', 'suspendacct', { user: 'res' }), 403, 'forbidden', undefined);
    assertRefused(await h.callAs('res', 'suspendacct', { user: 'alice' }), 400, 'account_not_found', 'user');
  });

  it('keeps a reseller from lifting a suspension the administrator made', async () => {
    await h.call('suspendacct', { user: 'kid2', reason: 'admin says' });
    assertRefused(await h.callAs('res', 'unsuspendacct', { user: 'kid2' }), 403, 'forbidden', undefined);
    assert.equal((await h.call('unsuspendacct', { user: 'kid2' })).statusCode, 200);
  });

  it('leaves the account active when a suspension step fails', async () => {
    driver.failAt = 'suspend:third';
    const reply = await h.call('suspendacct', { user: 'alice' });
    driver.failAt = null;
    assertRefused(reply, 500, 'provisioning_failed', undefined);
    assert.deepEqual(await suspended(h), {});
  });
});
