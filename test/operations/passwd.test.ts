import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertRefused,
  assertSentence,
  createAliceAndReseller,
  recordingDriver,
  suiteHarness,
} from '../helpers.ts';

describe('passwd', () => {
  const driver = recordingDriver();
  const h = suiteHarness({
    driver,
    prepare: (h) => createAliceAndReseller(h, 'kid'),
  });

  it('changes the password, given or generated, and answers with the seed sentence', async () => {
    const cases: Record<string, string>[] = [
      { user: 'alice', password: 'New-Password-1' },
      { user: 'alice' },
    ];
    for (const params of cases) {
      driver.log.length = 0;
      const reply = await h.call('passwd', params);
      assertSentence(reply, 'User password changed for alice');
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
    assertRefused(await h.call('passwd', {}), 400, 'missing_parameter', 'user');
    assertRefused(
      await h.call('passwd', { user: 'alice', password: 'short' }),
      400,
      'invalid_parameter',
      'password',
    );
    assertRefused(await h.call('passwd', { user: 'ghost' }), 400, 'account_not_found', 'user');
  });

  it("reaches only the reseller's own accounts", async () => {
    assert.equal((await h.callAs('res', 'passwd', { user: 'kid' })).statusCode, 200);
    assertRefused(await h.callAs('res', 'passwd', { user: 'alice' }), 400, 'account_not_found', 'user');
  });

  it('undoes the finished steps when one fails', async () => {
    driver.log.length = 0;
    driver.failAt = 'passwd:second';
    const reply = await h.call('passwd', { user: 'alice' });
    driver.failAt = null;
    assertRefused(reply, 500, 'provisioning_failed', undefined);
    assert.deepEqual(driver.log, ['run passwd:first alice', 'undo passwd:first alice']);
  });
});
