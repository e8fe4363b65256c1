import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  createAccount,
  createChild,
  createReseller,
  errorOf,
  recordingDriver,
  suiteHarness,
} from '../helpers.ts';

describe('passwd', () => {
  const driver = recordingDriver();
  const h = suiteHarness({
    driver,
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res');
      await createChild(h, 'res', 'kid');
    },
  });

  it('changes the password, given or generated, and answers with the seed sentence', async () => {
    const cases: Record<string, string>[] = [
      { user: 'alice', password: 'New-Password-1' },
      { user: 'alice' },
    ];
    for (const params of cases) {
      driver.log.length = 0;
      const reply = await h.call('passwd', params);
      assert.deepEqual(reply.body, {
        data: 'User password changed for alice',
        info: 'User password changed for alice',
        status: 200,
      });
      assert.deepEqual(driver.log, [
        'run passwd:first alice',
        'run passwd:second alice',
        'run passwd:third alice',
      ]);
    }
  });

  it('works in header style on the admin port', async () => {
    const reply = await h.request({
      url: '/api/v1/passwd/',
      headers: {
        'x-api-user': 'billing',
        'x-api-password': 'billing-secret-1',
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'user=alice&password=Another-Pass-2',
    });
    assert.equal(reply.body.data, 'User password changed for alice');
  });

  it('refuses a missing user, a bad password, and an unknown account', async () => {
    assert.deepEqual(errorOf(await h.call('passwd', {})), {
      status: 400,
      code: 'missing_parameter',
      param: 'user',
    });
    assert.deepEqual(errorOf(await h.call('passwd', { user: 'alice', password: 'short' })), {
      status: 400,
      code: 'invalid_parameter',
      param: 'password',
    });
    assert.deepEqual(errorOf(await h.call('passwd', { user: 'ghost' })), {
      status: 400,
      code: 'account_not_found',
      param: 'user',
    });
  });

  it("reaches only the reseller's own accounts", async () => {
    assert.equal((await h.callAs('res', 'passwd', { user: 'kid' })).statusCode, 200);
    assert.deepEqual(errorOf(await h.callAs('res', 'passwd', { user: 'alice' })), {
      status: 400,
      code: 'account_not_found',
      param: 'user',
    });
  });

  it('undoes the finished steps when one fails', async () => {
    driver.log.length = 0;
    driver.failAt = 'passwd:second';
    const reply = await h.call('passwd', { user: 'alice' });
    driver.failAt = null;
    assert.deepEqual(errorOf(reply), { status: 500, code: 'provisioning_failed', param: undefined });
    assert.deepEqual(driver.log, ['run passwd:first alice', 'undo passwd:first alice']);
  });
});
