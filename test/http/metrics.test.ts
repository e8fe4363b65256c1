import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  addApiUser,
  callCreateacct,
  createReseller,
  type Harness,
  recordingDriver,
  setup,
} from '../helpers.ts';

/** Prometheus text, parsed: `name{labels}` → value; fails on any line that is not the format. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.trim().split('\n')) {
    if (line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const match =
      /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*\})?) (-?[0-9.e+]+)$/.exec(
        line,
      );
    assert.ok(match, `not Prometheus text: ${line}`);
    samples.set(match[1]!, Number(match[2]));
  }
  return samples;
}

describe('metrics', () => {
  const driver = recordingDriver();
  let h: Harness;
  const scrape = async (headers: Record<string, string>) =>
    h.admin.inject({ method: 'GET', url: '/metrics', headers });

  before(async () => {
    h = await setup({ lockout: { maxFailures: 2, windowMinutes: 15, lockMinutes: 15 } }, { driver });
    await h.call('test_connection');
    await callCreateacct(h, 'alice', { domain: 'alice.example', email: 'a@example.com' });
    await callCreateacct(h, 'Bad', { domain: 'x.example', email: 'a@example.com' });
    await h.call('suspendacct', { user: 'alice' });
    driver.failAt = 'create:second';
    await callCreateacct(h, 'bob', { domain: 'bob.example', email: 'a@example.com' });
    driver.failAt = null;
    // A streamed answer, and a refusal given before the body is read.
    await h.call('listaccts');
    await h.request({ method: 'GET', url: '/api/v1/listaccts/' });
    for (let i = 0; i < 2; i++) {
      await h.request({
        url: '/api/v1/test_connection/',
        headers: { 'x-api-user': ADMIN_USER, 'x-api-password': 'wrong-one' },
        remoteAddress: '198.51.100.44',
      });
    }
  });
  after(() => h.close());

  it('counts calls by operation and status, with latency histograms, failures, lock-outs and accounts', async () => {
    const reply = await scrape({ 'x-api-user': ADMIN_USER, 'x-api-password': ADMIN_PASSWORD });
    assert.equal(reply.statusCode, 200);
    assert.match(String(reply.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const samples = parse(reply.body);
    assert.equal(samples.get('berth_requests_total{operation="createacct",status="200"}'), 1);
    assert.equal(samples.get('berth_requests_total{operation="createacct",status="400"}'), 1);
    assert.equal(samples.get('berth_requests_total{operation="createacct",status="500"}'), 1);
    assert.equal(samples.get('berth_requests_total{operation="test_connection",status="403"}'), 2);
    assert.equal(samples.get('berth_requests_total{operation="listaccts",status="200"}'), 1);
    assert.equal(samples.get('berth_requests_total{operation="listaccts",status="405"}'), 1);
    assert.equal(samples.get('berth_request_duration_seconds_count{operation="createacct"}'), 3);
    assert.equal(samples.get('berth_request_duration_seconds_bucket{operation="createacct",le="+Inf"}'), 3);
    // Buckets count cumulatively: every call took under ten seconds, and no bucket holds fewer
    // calls than a smaller one.
    assert.equal(samples.get('berth_request_duration_seconds_bucket{operation="createacct",le="10"}'), 3);
    const buckets = [...samples]
      .filter(([name]) => name.startsWith('berth_request_duration_seconds_bucket{operation="createacct",'))
      .map(([, value]) => value);
    assert.equal(buckets.length, 12);
    assert.deepEqual(
      buckets,
      [...buckets].sort((a, b) => a - b),
    );
    assert.equal(samples.get('berth_auth_failures_total'), 2);
    assert.equal(samples.get('berth_lockouts_total'), 1);
    assert.equal(samples.get('berth_driver_step_failures_total{step="create:second"}'), 1);
    assert.equal(samples.get('berth_accounts{state="suspended"}'), 1);
    assert.equal(samples.get('berth_accounts{state="active"}'), 0);
  });

  it('takes HTTP Basic credentials, as Prometheus sends them', async () => {
    const basic = Buffer.from(`${ADMIN_USER}:${ADMIN_PASSWORD}`).toString('base64');
    assert.equal((await scrape({ authorization: `Basic ${basic}` })).statusCode, 200);
  });

  it("is the administrator's: refused without credentials, to a reseller's API user, and on the reseller listener", async () => {
    assert.equal((await scrape({})).statusCode, 403);
    await createReseller(h, 'res');
    await addApiUser(h.services, { name: 'resapi', password: 'reseller-password', reseller: 'res' });
    assert.equal(
      (await scrape({ 'x-api-user': 'resapi', 'x-api-password': 'reseller-password' })).statusCode,
      403,
    );
    assert.equal((await h.reseller.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
  });
});
