// Berth's log and API calls: no line for a call that succeeds at the default level (the audit log
// records the calls that change anything), one line for each answered request at debug, and a
// password in none of them.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/services.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  callCreateacct,
  FORM,
  form,
  type Harness,
  recordingDriver,
  setup,
} from '../helpers.ts';

const driver = recordingDriver();

async function logging(level: string): Promise<{ h: Harness; lines: () => Record<string, unknown>[] }> {
  const written: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      written.push(String(chunk));
      done();
    },
  });
  const h = await setup({}, { log: createLogger(level, sink), driver });
  written.length = 0;
  return { h, lines: () => written.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

const call = (h: Harness, op: string, password = ADMIN_PASSWORD) =>
  h.request({
    url: `/api/v1/${op}/?apiauth=${password}`,
    headers: FORM,
    body: form({ apiuser: ADMIN_USER, apiauth: password }),
  });

describe('the log of API calls', { timeout: 30_000 }, () => {
  let info: Awaited<ReturnType<typeof logging>>;
  let debug: Awaited<ReturnType<typeof logging>>;
  before(async () => {
    info = await logging('info');
    debug = await logging('debug');
  });
  after(async () => {
    await info.h.close();
    await debug.h.close();
  });

  it('writes nothing for calls answered at the default level', async () => {
    assert.equal((await call(info.h, 'test_connection')).statusCode, 200);
    assert.equal((await call(info.h, 'listaccts')).statusCode, 200);
    assert.equal((await call(info.h, 'test_connection', 'wrong-password')).statusCode, 403);
    assert.deepEqual(info.lines(), []);
  });

  it('writes one line for each answered call at debug: method, path without the query, status, time; never the password', async () => {
    assert.equal((await call(debug.h, 'test_connection')).statusCode, 200);
    const refused = await call(debug.h, 'test_connection', 'wrong-password');
    assert.equal(refused.statusCode, 403, JSON.stringify(refused.body));
    const completed = debug.lines().filter((line) => line.msg === 'request completed');
    assert.equal(completed.length, 2, JSON.stringify(debug.lines()));
    assert.deepEqual(
      completed.map((line) => [line.req, (line.res as { statusCode: number }).statusCode]),
      [
        [{ method: 'POST', path: '/api/v1/test_connection/', remoteAddress: '127.0.0.1' }, 200],
        [{ method: 'POST', path: '/api/v1/test_connection/', remoteAddress: '127.0.0.1' }, 403],
      ],
    );
    for (const line of completed) {
      assert.equal(typeof line.responseTime, 'number');
      assert.equal(line.listener, 'admin');
      assert.match(String(line.reqId), /^req-/);
    }
    assert.notEqual(completed[0]!.reqId, completed[1]!.reqId);
    assert.equal(debug.lines().filter((line) => line.msg === 'incoming request').length, 0);
    const text = JSON.stringify(debug.lines());
    assert.ok(!text.includes(ADMIN_PASSWORD) && !text.includes('wrong-password'), text);
  });

  it('writes a call that fails on the server at error at the default level: its listener, request and path, never the password', async () => {
    info.lines();
    driver.failAt = 'create:second';
    try {
      const failed = await callCreateacct(info.h, 'failing', {
        domain: 'failing.example',
        email: 'a@example.com',
      });
      assert.equal(failed.statusCode >= 500, true, JSON.stringify(failed.body));
    } finally {
      driver.failAt = null;
    }
    const failures = info.lines().filter((line) => line.msg === 'request failed');
    assert.equal(failures.length, 1, JSON.stringify(info.lines()));
    assert.equal(failures[0]!.level, 50);
    assert.equal(failures[0]!.listener, 'admin');
    assert.equal(failures[0]!.path, '/api/v1/createacct/');
    assert.match(String(failures[0]!.reqId), /^req-/);
    assert.ok(!JSON.stringify(info.lines()).includes(ADMIN_PASSWORD));
  });
});
