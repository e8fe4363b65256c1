import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BERTH_VERSION } from '../../src/operations/version.ts';
import { callCreateacct, suiteHarness } from '../helpers.ts';

describe('server information', () => {
  const h = suiteHarness();

  it('test_connection answers Connection successful', async () => {
    assert.deepEqual((await h.call('test_connection')).body, {
      data: { test: 'Connection successful' },
      info: 'Connection successful',
      status: 200,
    });
  });

  it('load-average answers three numbers with two decimals', async () => {
    const reply = await h.call('load-average');
    assert.match(
      (reply.body.data as { load_average: string }).load_average,
      /^\d+\.\d\d \d+\.\d\d \d+\.\d\d$/,
    );
  });

  it('version answers Berth and the semver of package.json', async () => {
    const reply = await h.call('version');
    assert.match(BERTH_VERSION, /^\d+\.\d+\.\d+/);
    assert.deepEqual(reply.body.data, { version: `Berth ${BERTH_VERSION}`, version_code: BERTH_VERSION });
  });

  it('answers the same under a reseller', async () => {
    await callCreateacct(h, 'res', { domain: 'res.example', email: 'r@example.com', reseller: 'on' });
    assert.equal((await h.callAs('res', 'version')).statusCode, 200);
    assert.equal((await h.callAs('res', 'test_connection')).statusCode, 200);
    assert.equal((await h.callAs('res', 'load-average')).statusCode, 200);
  });
});
