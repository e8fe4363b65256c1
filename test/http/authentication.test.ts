import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deleteApiUser, resetApiUserPassword, setApiUserAccess } from '../../src/auth/api-users.ts';
import { CLI } from '../../src/operations/audited.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  addApiUser,
  assertErrorAnswer,
  assertRefused,
  callCreateacct,
  createChild,
  createReseller,
  errorOf,
  FORM,
  form,
  suiteHarness,
} from '../helpers.ts';

const NOT_PROVIDED = 'Authentication credentials were not provided';
const DENIED = 'You do not have permission to perform this action.';

function headers(user: string, password: string, extra: Record<string, string> = {}) {
  return { 'x-api-user': user, 'x-api-password': password, ...extra };
}

describe('authentication (CONTRACT §3)', () => {
  const h = suiteHarness();

  it('answers missing credentials, or half a style, with 403 not_authenticated', async () => {
    const cases: { headers?: Record<string, string>; body?: string }[] = [
      {},
      { headers: { 'x-api-user': ADMIN_USER } },
      { headers: { 'x-api-password': ADMIN_PASSWORD } },
      { headers: FORM, body: form({ apiuser: ADMIN_USER }) },
      { headers: FORM, body: form({ apiauth: ADMIN_PASSWORD }) },
      // Header style wins when X-API-USER is present: form fields do not complete it.
      { headers: { ...FORM, 'x-api-user': ADMIN_USER }, body: form({ apiauth: ADMIN_PASSWORD }) },
    ];
    for (const options of cases) {
      const reply = await h.request({ url: '/api/v1/listaccts/', ...options });
      assertErrorAnswer(reply, 403, 'not_authenticated', NOT_PROVIDED);
    }
  });

  it('answers a wrong password and an unknown user alike, with 403 forbidden', async () => {
    for (const [user, password] of [
      [ADMIN_USER, 'wrong-password'],
      ['nosuchuser', ADMIN_PASSWORD],
    ] as const) {
      const byForm = await h.request({
        url: '/api/v1/listaccts/',
        headers: FORM,
        body: form({ apiuser: user, apiauth: password }),
        remoteAddress: '10.9.0.1',
      });
      const byHeader = await h.request({
        url: '/api/v1/listaccts/',
        headers: headers(user, password),
        remoteAddress: '10.9.0.1',
      });
      for (const reply of [byForm, byHeader]) {
        assertErrorAnswer(reply, 403, 'forbidden', DENIED);
      }
    }
  });

  it('lets restricted access in only from the listed addresses and ranges', async () => {
    await addApiUser(h.services, {
      name: 'restricted',
      password: 'restricted-pass',
      allowedIps: ['203.0.113.0/24', '2001:db8::5'],
    });
    const call = (remoteAddress: string) =>
      h.request({
        url: '/api/v1/test_connection/',
        headers: headers('restricted', 'restricted-pass'),
        remoteAddress,
      });
    assert.equal((await call('203.0.113.44')).statusCode, 200);
    assert.equal((await call('::ffff:203.0.113.45')).statusCode, 200);
    assert.equal((await call('2001:db8::5')).statusCode, 200);
    const refused = await call('127.0.0.1');
    assertErrorAnswer(refused, 403, 'forbidden', DENIED);
  });

  it('takes a reset, an access change and a deletion into account from the next request on', async () => {
    const { db } = h.services.store;
    await addApiUser(h.services, { name: 'rotating', password: 'first-password' });
    const call = (password: string) =>
      h.request({
        url: '/api/v1/test_connection/',
        headers: headers('rotating', password),
        remoteAddress: '10.1.1.1',
      });
    assert.equal((await call('first-password')).statusCode, 200);
    assert.equal((await call('first-password')).statusCode, 200); // now cached
    await resetApiUserPassword(db, h.services.crypt, 'rotating', 'second-password', CLI);
    assert.equal((await call('first-password')).statusCode, 403);
    assert.equal((await call('second-password')).statusCode, 200);
    await setApiUserAccess(db, 'rotating', ['198.51.100.1'], CLI);
    assert.equal((await call('second-password')).statusCode, 403);
    await setApiUserAccess(db, 'rotating', [], CLI);
    assert.equal((await call('second-password')).statusCode, 200);
    await deleteApiUser(db, 'rotating', CLI);
    assert.equal((await call('second-password')).statusCode, 403);
  });

  it('makes a bound API account act as its reseller, and refuses another X-RESELLER', async () => {
    await createReseller(h, 'boundres');
    await createChild(h, 'boundres', 'boundchild');
    await addApiUser(h.services, { name: 'boundapi', password: 'bound-password', reseller: 'boundres' });
    const list = await h.request({
      url: '/api/v1/listaccts/',
      headers: headers('boundapi', 'bound-password'),
    });
    assert.deepEqual(Object.keys((list.body.data as { accounts: object }).accounts), ['boundchild']);
    const same = await h.request({
      url: '/api/v1/listaccts/',
      listener: 'reseller',
      headers: headers('boundapi', 'bound-password', { 'x-reseller': 'boundres' }),
    });
    assert.equal(same.statusCode, 200);
    const other = await h.request({
      url: '/api/v1/listaccts/',
      headers: headers('boundapi', 'bound-password', { 'x-reseller': 'someoneelse' }),
    });
    assertRefused(other, 403, 'forbidden', undefined);
  });

  it('never shows a password in an answer', async () => {
    const reply = await callCreateacct(h, 'pwshown', {
      domain: 'pwshown.example',
      email: 'p@example.com',
      password: 'Visible-Secret-99',
    });
    assert.equal(reply.statusCode, 200);
    assert.ok(!JSON.stringify(reply.body).includes('Visible-Secret-99'));
  });
});

describe('the reseller listener', () => {
  const h = suiteHarness();

  it('refuses a call without X-RESELLER with 403 and the port message', async () => {
    const reply = await h.request({
      url: '/api/v1/listaccts/',
      listener: 'reseller',
      headers: headers(ADMIN_USER, ADMIN_PASSWORD),
    });
    assertErrorAnswer(reply, 403, 'forbidden', 'This port serves reseller calls only: send X-RESELLER');
  });

  it('refuses an X-RESELLER that names no active reseller', async () => {
    await createReseller(h, 'suspres');
    await h.call('suspendacct', { user: 'suspres' });
    await callCreateacct(h, 'plainacct', { domain: 'plainacct.example', email: 'p@example.com' });
    for (const name of ['ghost', 'plainacct', 'suspres']) {
      const reply = await h.callAs(name, 'listaccts');
      assert.deepEqual(errorOf(reply), { status: 403, code: 'forbidden', param: undefined }, name);
    }
  });
});

describe('brute-force lock-out', () => {
  const h = suiteHarness({ config: { lockout: { maxFailures: 3, windowMinutes: 15, lockMinutes: 15 } } });

  it('locks an address out after the configured failures, correct credentials included, with Retry-After', async () => {
    const attempt = (password: string, remoteAddress = '198.51.100.9') =>
      h.request({ url: '/api/v1/test_connection/', headers: headers(ADMIN_USER, password), remoteAddress });
    for (let i = 0; i < 3; i++) assert.equal((await attempt('wrong-password')).statusCode, 403);
    const locked = await attempt(ADMIN_PASSWORD);
    assertRefused(locked, 429, 'rate_limited', undefined);
    const seconds = Number(locked.headers['retry-after']);
    assert.ok(seconds > 14 * 60 && seconds <= 15 * 60, `Retry-After ${seconds}`);
    // Another address is not affected.
    assert.equal((await attempt(ADMIN_PASSWORD, '198.51.100.10')).statusCode, 200);
  });
});

describe('trusted addresses (a billing system on the same server)', () => {
  const h = suiteHarness({
    config: {
      trustedAddresses: ['127.0.0.1', '::1', '10.20.0.0/16'],
      lockout: { maxFailures: 3, windowMinutes: 15, lockMinutes: 15 },
    },
  });
  const attempt = (password: string, remoteAddress: string) =>
    h.request({ url: '/api/v1/test_connection/', headers: headers(ADMIN_USER, password), remoteAddress });

  it("never locks out a trusted address, however many wrong passwords an account's code sends from it", async () => {
    for (const address of ['127.0.0.1', '::ffff:127.0.0.1', '::1', '10.20.3.4']) {
      for (let i = 0; i < 12; i++) {
        assert.deepEqual(
          errorOf(await attempt(`wrong-password-${i}`, address)),
          { status: 403, code: 'forbidden', param: undefined },
          `${address}, failure ${i + 1}`,
        );
      }
      assert.equal((await attempt(ADMIN_PASSWORD, address)).statusCode, 200, address);
    }
    // Not counted either: nothing is kept that would lock them once the setting is gone.
    const rows = await h.services.store.db.selectFrom('auth_failure_times').select('address').execute();
    assert.deepEqual(rows, []);
  });

  it('locks out any other address after its failures, and that address only', async () => {
    for (let i = 0; i < 3; i++) await attempt('wrong-password', '10.21.0.9');
    assert.equal(errorOf(await attempt(ADMIN_PASSWORD, '10.21.0.9')).status, 429);
    assert.equal((await attempt(ADMIN_PASSWORD, '10.21.0.10')).statusCode, 200);
    assert.equal((await attempt(ADMIN_PASSWORD, '127.0.0.1')).statusCode, 200);
  });
});

describe('trusted proxies', () => {
  const h = suiteHarness({
    config: { trustedProxies: ['10.0.0.1'] },
    prepare: async (h) => {
      await addApiUser(h.services, {
        name: 'viaproxy',
        password: 'proxy-password',
        allowedIps: ['203.0.113.9'],
      });
    },
  });

  it('honours X-Forwarded-For from a trusted proxy only', async () => {
    const call = (remoteAddress: string) =>
      h.request({
        url: '/api/v1/test_connection/',
        headers: headers('viaproxy', 'proxy-password', { 'x-forwarded-for': '203.0.113.9' }),
        remoteAddress,
      });
    assert.equal((await call('10.0.0.1')).statusCode, 200);
    assert.equal((await call('10.0.0.2')).statusCode, 403);
  });
});

describe('demonstration server', () => {
  const h = suiteHarness({ config: { demo: true } });

  it('refuses every state-changing operation with 403 demo_server and keeps reads working', async () => {
    const reply = await callCreateacct(h, 'demo1', { domain: 'demo1.example', email: 'd@example.com' });
    assertErrorAnswer(reply, 403, 'demo_server', 'This is a demonstration server: changes are disabled');
    for (const op of ['passwd', 'suspendacct', 'addpkg', 'killpkg', 'removeacct']) {
      assert.equal(errorOf(await h.call(op, { user: 'demo1', name: 'x' })).code, 'demo_server', op);
    }
    assert.equal((await h.call('listaccts')).statusCode, 200);
    assert.equal((await h.call('version')).statusCode, 200);
    assert.deepEqual((await h.call('get_current_users_count')).body.data, { users: 0 });
  });
});

describe('password checks under a burst', () => {
  const h = suiteHarness();

  it('lets a burst of calls with the right, not yet verified password all in', async () => {
    const replies = await Promise.all(
      Array.from({ length: 30 }, () =>
        h.request({
          url: '/api/v1/test_connection/',
          headers: headers(ADMIN_USER, ADMIN_PASSWORD),
          remoteAddress: '192.0.2.77',
        }),
      ),
    );
    assert.deepEqual(new Set(replies.map((r) => r.statusCode)), new Set([200]));
  });

  it('refuses at once what one address queues beyond the passwords it may still get wrong', async () => {
    const replies = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        h.request({
          url: '/api/v1/test_connection/',
          headers: headers(ADMIN_USER, `wrong-password-${i}`),
          remoteAddress: '192.0.2.78',
        }),
      ),
    );
    const statuses = replies.map((r) => r.statusCode);
    assert.equal(statuses.filter((s) => s === 403).length, 10);
    assert.equal(statuses.filter((s) => s === 429).length, 15);
  });

  it('counts the failures an address already has against what it may queue', async () => {
    const wrong = (i: number) =>
      h.request({
        url: '/api/v1/test_connection/',
        headers: headers(ADMIN_USER, `wrong-password-${i}`),
        remoteAddress: '192.0.2.79',
      });
    for (let i = 0; i < 6; i += 1) assert.equal((await wrong(i)).statusCode, 403);
    const statuses = (await Promise.all(Array.from({ length: 20 }, (_, i) => wrong(100 + i)))).map(
      (r) => r.statusCode,
    );
    assert.equal(statuses.filter((s) => s === 403).length, 4);
    assert.equal(statuses.filter((s) => s === 429).length, 16);
  });
});
