import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  assertRefused,
  createAccount,
  errorOf,
  FORM,
  form,
  suiteHarness,
} from '../helpers.ts';

const CREDS = { apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD };

describe('transport (CONTRACT §1)', () => {
  const h = suiteHarness();

  it('serves every operation under /api/ and /api/v1/, with or without the trailing slash', async () => {
    for (const url of [
      '/api/test_connection/',
      '/api/test_connection',
      '/api/v1/test_connection/',
      '/api/v1/test_connection',
    ]) {
      const reply = await h.request({ url, headers: FORM, body: form(CREDS) });
      assert.deepEqual(
        reply.body,
        { data: { test: 'Connection successful' }, info: 'Connection successful', status: 200 },
        url,
      );
    }
  });

  it('answers the bare base path with the credential check and no envelope', async () => {
    for (const url of ['/api/', '/api', '/api/v1/', '/api/v1']) {
      const reply = await h.request({ url, headers: FORM, body: form(CREDS) });
      assert.equal(reply.statusCode, 200);
      assert.deepEqual(reply.body, { username: ADMIN_USER, auth: 'API' }, url);
    }
  });

  it('refuses any method but POST with 405 and Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const reply = await h.request({ method, url: '/api/v1/listaccts/' });
      assert.equal(reply.statusCode, 405, method);
      assert.equal(reply.headers.allow, 'POST');
      assert.deepEqual(reply.body.data, { code: 'method_not_allowed' });
      assert.equal(reply.body.status, 405);
    }
  });

  it('answers an unknown operation with 404 before authentication', async () => {
    for (const url of ['/api/v1/nosuchop/', '/api/v2/listaccts/', '/api/listaccts/extra/']) {
      const reply = await h.request({ url });
      assert.deepEqual(errorOf(reply), { status: 404, code: 'unknown_operation', param: undefined }, url);
      assert.equal(reply.body.status, 404);
    }
  });

  it('reads JSON and multipart bodies as well as form-encoded ones', async () => {
    const json = await h.request({
      url: '/api/v1/test_connection/',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(CREDS),
    });
    assert.equal(json.statusCode, 200);
    const boundary = 'berthboundary';
    const multipart = Object.entries({ ...CREDS, user: 'nobodyhere' })
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('');
    const reply = await h.request({
      url: '/api/v1/accountsummary/',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: `${multipart}--${boundary}--\r\n`,
    });
    assertRefused(reply, 400, 'account_not_found', 'user');
  });

  it('takes numbers in a JSON body as their text, and refuses other JSON values', async () => {
    await createAccount(h, 'jsonquota');
    const ok = await h.request({
      url: '/api/v1/editquota/',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CREDS, user: 'jsonquota', quota: 250 }),
    });
    assert.equal(ok.statusCode, 200);
    const bad = await h.request({
      url: '/api/v1/editquota/',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...CREDS, user: 'jsonquota', quota: [1] }),
    });
    assertRefused(bad, 400, 'invalid_parameter', 'quota');
    for (const [value, what] of [
      [true, 'true (a JSON boolean)'],
      [null, 'null'],
      [[1], 'a JSON list'],
      [{ mb: 1 }, 'a JSON object'],
    ] as const) {
      const refused = await h.request({
        url: '/api/v1/editquota/',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...CREDS, user: 'jsonquota', quota: value }),
      });
      assert.equal(
        refused.body.info,
        `The parameter quota is invalid: it must be text or a number, not ${what}.`,
      );
    }
    const broken = await h.request({
      url: '/api/v1/listaccts/',
      headers: { 'content-type': 'application/json' },
      body: '{"apiuser":',
    });
    assertRefused(broken, 400, 'invalid_parameter', undefined);
  });

  it('accepts a header-style call with no body and no Content-Type', async () => {
    const reply = await h.request({
      url: '/api/v1/listaccts/',
      headers: { 'x-api-user': ADMIN_USER, 'x-api-password': ADMIN_PASSWORD },
    });
    assert.equal(reply.statusCode, 200);
  });

  it('refuses other content types with 415 and bodies over 64 KiB with 413', async () => {
    const text = await h.request({
      url: '/api/v1/listaccts/',
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    });
    assertRefused(text, 415, 'unsupported_media_type', undefined);
    const big = await h.request({
      url: '/api/v1/listaccts/',
      headers: FORM,
      body: form({ ...CREDS, pad: 'x'.repeat(70_000) }),
    });
    assertRefused(big, 413, 'payload_too_large', undefined);
    assert.equal(big.body.status, 413);
  });

  it('says so when a parameter comes as a list (user[]=x), rather than that it is missing', async () => {
    for (const key of ['user[]', 'user[0]']) {
      const reply = await h.request({
        url: '/api/v1/accountsummary/',
        headers: FORM,
        body: `${form(CREDS)}&${encodeURIComponent(key)}=alice`,
      });
      assertRefused(reply, 400, 'invalid_parameter', 'user');
      assert.equal(
        reply.body.info,
        `The parameter user is invalid: it was sent as ${key}, a list: send user once, as text.`,
      );
    }
  });

  it('refuses a parameter given twice, and ignores unknown parameters', async () => {
    const twice = await h.request({
      url: '/api/v1/accountsummary/',
      headers: FORM,
      body: `${form(CREDS)}&user=a1&user=a2`,
    });
    assertRefused(twice, 400, 'invalid_parameter', 'user');
    const unknown = await h.request({
      url: '/api/v1/test_connection/',
      headers: FORM,
      body: form({ ...CREDS, whatever: 'x\u0000y' }),
    });
    assert.equal(unknown.statusCode, 200);
  });

  it('refuses control characters in values, but lets a reason hold tab and newline', async () => {
    await createAccount(h, 'ctrl');
    for (const value of ['a\u0000b', 'tab\there', 'new\nline', 'bell\u0007']) {
      const reply = await h.call('changecontactemail', { user: 'ctrl', email: `${value}@example.com` });
      assert.deepEqual(
        errorOf(reply),
        { status: 400, code: 'invalid_parameter', param: 'email' },
        JSON.stringify(value),
      );
    }
    const nul = await h.call('suspendacct', { user: 'ctrl', reason: 'nul\u0000' });
    assertRefused(nul, 400, 'invalid_parameter', 'reason');
    const ok = await h.call('suspendacct', { user: 'ctrl', reason: 'line one\nline\ttwo' });
    assert.equal(ok.statusCode, 200);
    const listed = await h.call('listsuspended');
    const accounts = (listed.body.data as { accounts: Record<string, { reason: string }> }).accounts;
    assert.equal(accounts.ctrl?.reason, 'line one\nline\ttwo');
  });

  it('makes the HTTP status equal the envelope status on every answer', async () => {
    const replies = [
      await h.call('accountsummary', {}),
      await h.call('accountsummary', { user: 'ghost' }),
      await h.request({
        url: '/api/v1/listaccts/',
        headers: FORM,
        body: form({ apiuser: ADMIN_USER, apiauth: 'wrong-pass' }),
      }),
      await h.request({ url: '/api/v1/listaccts/' }),
      await h.call('listaccts'),
    ];
    for (const reply of replies) assert.equal(reply.statusCode, reply.body.status);
  });
});
