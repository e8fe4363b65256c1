// The attacks of an outside security review, each re-run as it was made: every one must be refused
// or harmless. (Connection slots are in test/http/limits.test.ts, links planted in homes in
// test/provision/links.test.ts.)

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bindApiUser, deleteApiUser } from '../src/auth/api-users.ts';
import { Lockout } from '../src/auth/lockout.ts';
import { FLEET_PATHS } from '../src/fleet/calls.ts';
import { CLI } from '../src/operations/audited.ts';
import { listAudit } from '../src/store/audit.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  addApiUser,
  assertRefused,
  callCreateacct,
  createAccount,
  createChild,
  createReseller,
  errorOf,
  FORM,
  form,
  type Harness,
  suiteHarness,
} from './helpers.ts';

/** Counts the password hashes the server computes (each is a verify in the crypt pool). */
function countHashes(h: Harness): { count: number } {
  const counter = { count: 0 };
  const verify = h.services.crypt.verify.bind(h.services.crypt);
  h.services.crypt.verify = (password, hash) => {
    counter.count++;
    return verify(password, hash);
  };
  return counter;
}

async function lastAudit(h: Harness) {
  const [entry] = await listAudit(h.services.store.db, { limit: 1 });
  return entry!;
}

async function accountCount(h: Harness): Promise<number> {
  return ((await h.call('get_current_users_count')).body.data as { users: number }).users;
}

describe('password cost', () => {
  const h = suiteHarness();

  it('never hashes a password outside 8-128 characters, API and credential check alike', async () => {
    const hashes = countHashes(h);
    for (const password of ['x'.repeat(60_000), 'x'.repeat(129), 'short', '€'.repeat(129)]) {
      for (const url of ['/api/v1/test_connection/', '/api/']) {
        const reply = await h.request({
          url,
          headers: FORM,
          body: form({ apiuser: ADMIN_USER, apiauth: password }),
          remoteAddress: '198.51.100.7',
        });
        assert.equal(reply.statusCode, 403);
      }
    }
    assert.equal(hashes.count, 0);
  });

  it('still hashes and accepts passwords of exactly 8 and 128 characters', async () => {
    for (const [name, password] of [
      ['eight', 'abcdefgh'],
      ['longest', '€'.repeat(128)],
    ] as const) {
      await addApiUser(h.services, { name, password });
      const reply = await h.request({
        url: '/api/v1/test_connection/',
        headers: { 'x-api-user': name, 'x-api-password': password },
      });
      assert.equal(reply.statusCode, 200, name);
    }
  });

  it('lets one address have only a few hashes in flight, so another address still logs in', async () => {
    const { crypt } = h.services;
    const realVerify = crypt.verify.bind(crypt);
    const held: (() => void)[] = [];
    let inFlightFromAttacker = 0;
    let mostInFlight = 0;
    crypt.verify = async (password, hash) => {
      if (!password.startsWith('attack-')) return realVerify(password, hash);
      inFlightFromAttacker++;
      mostInFlight = Math.max(mostInFlight, inFlightFromAttacker);
      await new Promise<void>((resolve) => held.push(resolve));
      inFlightFromAttacker--;
      return false;
    };
    try {
      const attack = Array.from({ length: 30 }, (_, i) =>
        h.request({
          url: '/api/v1/test_connection/',
          headers: { 'x-api-user': ADMIN_USER, 'x-api-password': `attack-${i}-password` },
          remoteAddress: '203.0.113.66',
        }),
      );
      // Wait until the attacker's hashes have started, and a little longer for any beyond two.
      for (let waited = 0; held.length < 2 && waited < 5000; waited += 10)
        await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(mostInFlight, 2);
      // The attacker's hashes are stuck; a caller from elsewhere is not.
      const valid = await h.request({
        url: '/api/v1/test_connection/',
        headers: { 'x-api-user': ADMIN_USER, 'x-api-password': ADMIN_PASSWORD },
        remoteAddress: '192.0.2.200',
      });
      assert.equal(valid.statusCode, 200);
      while (held.length > 0 || inFlightFromAttacker > 0) {
        held.splice(0).forEach((release) => {
          release();
        });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const replies = await Promise.all(attack);
      const busy = replies.filter((r) => r.statusCode === 429);
      assert.ok(busy.length > 0, 'checks beyond the queue are refused at once');
      assert.ok(busy.every((r) => r.headers['retry-after'] !== undefined));
      assert.equal(mostInFlight, 2);
    } finally {
      crypt.verify = realVerify;
    }
  });
});

describe('main domains', () => {
  const h = suiteHarness({
    config: {
      hostName: 'panel.example.net',
      nameservers: ['ns1.panel.example.net', 'ns2.dns.example'],
    },
    prepare: async (h) => {
      await createAccount(h, 'owner', { domain: 'yy.example' });
      await createReseller(h, 'resa', { domain: 'resa.example' });
    },
  });

  it('a reseller cannot take www., mail. or any name under another customer’s domain', async () => {
    const before = await accountCount(h);
    for (const domain of ['www.yy.example', 'mail.yy.example', 'a.b.yy.example', 'YY.example.']) {
      const reply = await h.callAs('resa', 'createacct', {
        user: 'taker',
        domain,
        email: 'taker@example.com',
        package: 'default',
      });
      assert.deepEqual(errorOf(reply), { status: 400, code: 'domain_in_use', param: 'domain' }, domain);
    }
    assert.equal(await accountCount(h), before);
  });

  it('nor a domain above another customer’s', async () => {
    await createAccount(h, 'shopper', { domain: 'www.shop.example' });
    const reply = await callCreateacct(h, 'above', { domain: 'shop.example', email: 'a@example.com' });
    assertRefused(reply, 400, 'domain_in_use', 'domain');
    // The answer names no other customer's domain.
    assert.equal(
      reply.body.info,
      'The domain shop.example is, lies under or lies above a domain of another account.',
    );
  });

  it('nor the host name, a name under it, or a name server’s name', async () => {
    for (const domain of [
      'panel.example.net',
      'x.panel.example.net',
      'ns1.panel.example.net',
      'ns2.dns.example',
    ]) {
      const reply = await callCreateacct(h, 'hostile', { domain, email: 'a@example.com' });
      assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'domain' }, domain);
    }
  });

  it('of two overlapping domains created at the same moment, exactly one is taken', async () => {
    for (let round = 0; round < 5; round++) {
      const replies = await Promise.all(
        [`race${round}.example`, `www.race${round}.example`].map((domain, i) =>
          callCreateacct(h, `race${round}x${i}`, { domain, email: 'r@example.com' }),
        ),
      );
      assert.deepEqual(
        replies.map((r) => r.statusCode).sort(),
        [200, 400],
        JSON.stringify(replies.map((r) => r.body)),
      );
    }
  });

  it('a sibling or a look-alike is no overlap', async () => {
    await createAccount(h, 'sibling', { domain: 'zz.example' });
    await createAccount(h, 'lookalike', { domain: 'xyy.example' });
  });
});

describe('suspensions and resellers', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'resc', { domain: 'resc.example' });
      await createChild(h, 'resc', 'cust');
    },
  });

  it('a reseller cannot lift a suspension the administrator renewed, nor replace its reason', async () => {
    assert.equal(
      (await h.callAs('resc', 'suspendacct', { user: 'cust', reason: 'reseller' })).statusCode,
      200,
    );
    assert.equal((await h.call('suspendacct', { user: 'cust', reason: 'admin: abuse' })).statusCode, 200);
    assertRefused(await h.callAs('resc', 'unsuspendacct', { user: 'cust' }), 403, 'forbidden', undefined);
    assert.equal((await h.callAs('resc', 'suspendacct', { user: 'cust', reason: 'mine' })).statusCode, 200);
    const listed = (await h.call('listsuspended')).body.data as {
      accounts: Record<string, { reason: string }>;
    };
    assert.equal(listed.accounts.cust?.reason, 'admin: abuse');
    assert.equal((await h.callAs('resc', 'unsuspendacct', { user: 'cust' })).statusCode, 403);
    assert.equal((await h.call('unsuspendacct', { user: 'cust' })).statusCode, 200);
  });

  it('an administrator’s renewal without a reason still makes the suspension the administrator’s', async () => {
    assert.equal((await h.callAs('resc', 'suspendacct', { user: 'cust', reason: 'late' })).statusCode, 200);
    assert.equal((await h.call('suspendacct', { user: 'cust' })).statusCode, 200);
    assert.equal((await h.callAs('resc', 'unsuspendacct', { user: 'cust' })).statusCode, 403);
    assert.equal((await h.call('unsuspendacct', { user: 'cust' })).statusCode, 200);
  });

  it('an API account bound to a removed reseller does not act for a new account of that name', async () => {
    const { db } = h.services.store;
    await createReseller(h, 'resd', { domain: 'resd.example' });
    await addApiUser(h.services, { name: 'boundd', password: 'bound-password-1', reseller: 'resd' });
    const asBound = (op: string, params: Record<string, string> = {}) =>
      h.request({
        url: `/api/v1/${op}/`,
        headers: { ...FORM, 'x-api-user': 'boundd', 'x-api-password': 'bound-password-1' },
        body: form(params),
      });
    assert.equal((await asBound('listaccts')).statusCode, 200);
    assert.equal((await h.call('removeacct', { user: 'resd' })).statusCode, 200);
    await createReseller(h, 'resd', { domain: 'resd2.example' });
    await createChild(h, 'resd', 'victim');
    for (const op of ['listaccts', 'usagestatistics']) {
      const reply = await asBound(op);
      assert.equal(reply.statusCode, 403, op);
      assert.ok(!JSON.stringify(reply.body).includes('victim'));
    }
    assert.equal((await asBound('suspendacct', { user: 'victim' })).statusCode, 403);
    // Demoted and promoted again is a new reseller too; the administrator rebinds on purpose.
    await bindApiUser(db, 'boundd', 'resd', CLI);
    assert.equal((await asBound('listaccts')).statusCode, 200);
    assert.equal((await h.call('terminatereseller', { user: 'resd' })).statusCode, 200);
    assert.equal((await h.call('setupreseller', { user: 'resd' })).statusCode, 200);
    assert.equal((await asBound('listaccts')).statusCode, 403);
  });

  it('usagestatistics under a reseller names no account of a sub-reseller’s', async () => {
    await h.call('setupreseller', { user: 'resc', alpha: 'on' });
    await createChild(h, 'resc', 'subres', { reseller: 'on' });
    await createChild(h, 'subres', 'deep');
    const reply = await h.callAs('resc', 'usagestatistics');
    assert.equal(reply.statusCode, 200);
    const accounts = (
      reply.body.data as { accounts: Record<string, { reseller_data?: { accounts: string[] } }> }
    ).accounts;
    assert.ok(accounts.subres, 'the sub-reseller itself is in scope');
    assert.deepEqual(accounts.subres.reseller_data?.accounts, []);
    assert.ok(!JSON.stringify(reply.body).includes('deep'));
  });
});

describe('the dedicated address pool', () => {
  const h = suiteHarness({
    config: {
      ipPool: { ipv4: ['198.51.100.1', '198.51.100.2', '198.51.100.3', '198.51.100.4'], ipv6: [] },
    },
    prepare: async (h) => {
      await createReseller(h, 'resp', { domain: 'resp.example' });
    },
  });

  it('resellers together may hold half of it; the rest stays for the administrator', async () => {
    await createChild(h, 'resp', 'pa', { ipv4: 'on' });
    await createChild(h, 'resp', 'pb', { ipv4: 'on' });
    const refused = await h.callAs('resp', 'createacct', {
      user: 'pc',
      domain: 'pc.example',
      email: 'pc@example.com',
      package: 'default',
      ipv4: 'on',
    });
    assertRefused(refused, 400, 'no_free_ip', 'ipv4');
    assert.match(refused.body.info, /resellers' share/);
    await createAccount(h, 'qa', { ipv4: 'on' });
    await createAccount(h, 'qb', { ipv4: 'on' });
    assertRefused(
      await callCreateacct(h, 'qc', { domain: 'qc.example', email: 'q@example.com', ipv4: 'on' }),
      400,
      'no_free_ip',
      'ipv4',
    );
  });
});

describe('the audit log', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'resx', { domain: 'resx.example' });
    },
  });

  it('shows a claimed user name that is no valid API user name as ?', async () => {
    for (const claimed of ['evil\u001b[2J', 'a\nforged row', 'root', 'cli', 'x'.repeat(40)]) {
      const reply = await h.request({
        url: '/api/v1/suspendacct/',
        headers: FORM,
        body: form({ apiuser: claimed, apiauth: 'wrong-password', user: 'resx' }),
      });
      assert.equal(reply.statusCode, 403);
      assert.equal((await lastAudit(h)).api_user, '?', JSON.stringify(claimed));
    }
    await h.request({
      url: '/api/v1/suspendacct/',
      headers: FORM,
      body: form({ apiuser: 'unknown-name', apiauth: 'wrong-password', user: 'bad target\u0085' }),
    });
    const entry = await lastAudit(h);
    assert.deepEqual([entry.api_user, entry.target], ['unknown-name', '?']);
  });

  it('records refusals on state-changing paths made before the operation runs', async () => {
    const cases: [string, Parameters<Harness['request']>[0], string][] = [
      ['method_not_allowed', { method: 'GET', url: '/api/v1/createacct/' }, 'createacct'],
      [
        'payload_too_large',
        { url: '/api/v1/passwd/', headers: FORM, body: `user=${'a'.repeat(70_000)}` },
        'passwd',
      ],
      [
        'unsupported_media_type',
        { url: '/api/v1/removeacct/', headers: { 'content-type': 'text/plain' }, body: 'user=x' },
        'removeacct',
      ],
      [
        'invalid_parameter',
        { url: '/api/v1/suspendacct/', headers: { 'content-type': 'application/json' }, body: '{"user":' },
        'suspendacct',
      ],
      [
        'forbidden',
        {
          url: '/api/v1/killpkg/',
          listener: 'reseller',
          headers: { ...FORM, 'x-api-user': ADMIN_USER, 'x-api-password': ADMIN_PASSWORD },
          body: 'name=default',
        },
        'killpkg',
      ],
    ];
    for (const [code, request, operation] of cases) {
      const reply = await h.request({ remoteAddress: '192.0.2.44', ...request });
      assert.equal((reply.body.data as { code: string }).code, code);
      const entry = await lastAudit(h);
      assert.deepEqual(
        { operation: entry.operation, code: entry.code, address: entry.address, status: entry.status },
        { operation, code, address: '192.0.2.44', status: reply.statusCode },
        code,
      );
    }
    const entries = (await listAudit(h.services.store.db, { limit: 1000 })).length;
    await h.request({ method: 'GET', url: '/api/v1/listaccts/' });
    assert.equal(
      (await listAudit(h.services.store.db, { limit: 1000 })).length,
      entries,
      'reads are not audited',
    );
  });
});

describe('request bodies', () => {
  const h = suiteHarness();

  it('refuse a JSON key given twice, however it is spelled, like a repeated form field', async () => {
    for (const body of [
      `{"apiuser":"${ADMIN_USER}","apiauth":"${ADMIN_PASSWORD}","user":"aa","user":"bb","domain":"a.example","email":"a@example.com","package":"default"}`,
      `{"apiuser":"${ADMIN_USER}","apiauth":"${ADMIN_PASSWORD}","user":"aa","u\\u0073er":"bb","domain":"a.example","email":"a@example.com","package":"default"}`,
    ]) {
      const reply = await h.request({
        url: '/api/v1/createacct/',
        headers: { 'content-type': 'application/json' },
        body,
      });
      assertRefused(reply, 400, 'invalid_parameter', 'user');
    }
    assert.equal(await accountCount(h), 0);
  });

  it('answer with nosniff, API, portal, panel, metrics and fleet alike, refusals and failures included', async () => {
    for (const [app, method, url, body] of [
      [h.admin, 'POST', '/api/v1/version/', undefined],
      [h.admin, 'POST', '/api/v1/nothing/', undefined],
      [h.admin, 'GET', '/api/v1/version/', undefined],
      [h.admin, 'POST', '/api/v1/test_connection/', 'x'.repeat(70 * 1024)],
      [h.admin, 'GET', '/api/openapi.json', undefined],
      [h.admin, 'GET', '/login', undefined],
      [h.admin, 'GET', '/no-such-page', undefined],
      [h.admin, 'GET', '/metrics', undefined],
      [h.admin, 'POST', FLEET_PATHS.steps, undefined],
      [h.reseller, 'POST', '/api/v1/version/', undefined],
      [h.customer, 'POST', '/api/v1/list_domains/', undefined],
      [h.customer, 'GET', '/login', undefined],
      [h.customer, 'GET', '/no-such-page', undefined],
    ] as const) {
      const reply = await app.inject({
        method,
        url,
        ...(body !== undefined && { payload: body, headers: { 'content-type': 'text/plain' } }),
      });
      assert.equal(reply.headers['x-content-type-options'], 'nosniff', `${method} ${url}`);
    }
  });
});

describe('API account names and identities', () => {
  const h = suiteHarness();

  it('root and cli are reserved for the portal and the command line', async () => {
    for (const name of ['root', 'cli']) {
      await assert.rejects(addApiUser(h.services, { name, password: 'reserved-password' }), /reserved/);
    }
    // Even a row written by an older version does not authenticate.
    await h.services.store.db
      .insertInto('api_users')
      .values({
        id: 'old-root',
        name: 'root',
        password_hash: await h.services.crypt.hash('reserved-password'),
        access: 'open',
        allowed_ips: '[]',
        reseller: null,
        reseller_id: null,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
        last_used_at: null,
      })
      .execute();
    const reply = await h.request({
      url: '/api/v1/test_connection/',
      headers: { 'x-api-user': 'root', 'x-api-password': 'reserved-password' },
    });
    assert.equal(reply.statusCode, 403);
  });

  it('an Idempotency-Key answer does not outlive its API account', async () => {
    const { db } = h.services.store;
    const make = () => addApiUser(h.services, { name: 'temp', password: 'temp-password' });
    const create = () =>
      h.request({
        url: '/api/v1/createacct/',
        headers: {
          ...FORM,
          'x-api-user': 'temp',
          'x-api-password': 'temp-password',
          'idempotency-key': 'k-1',
        },
        body: form({ user: 'idem', domain: 'idem.example', email: 'i@example.com', package: 'default' }),
      });
    await make();
    assert.equal((await create()).statusCode, 200);
    assert.equal((await h.call('removeacct', { user: 'idem' })).statusCode, 200);
    await deleteApiUser(db, 'temp', CLI);
    await make();
    assert.equal((await create()).statusCode, 200);
    assert.notEqual((await lastAudit(h)).code, 'replayed');
    assert.equal(await accountCount(h), 1);
  });

  it('an allow-list entry written as an IPv4-mapped address means the IPv4 address', async () => {
    const user = await addApiUser(h.services, {
      name: 'mapped',
      password: 'mapped-password',
      allowedIps: ['::ffff:192.0.2.9', '::ffff:198.51.100.0/120'],
    });
    assert.deepEqual(user.allowedIps, ['192.0.2.9', '198.51.100.0/24']);
    for (const remoteAddress of ['192.0.2.9', '::ffff:192.0.2.9', '198.51.100.77']) {
      const reply = await h.request({
        url: '/api/v1/test_connection/',
        headers: { 'x-api-user': 'mapped', 'x-api-password': 'mapped-password' },
        remoteAddress,
      });
      assert.equal(reply.statusCode, 200, remoteAddress);
    }
  });
});

describe('the lock-out', () => {
  const h = suiteHarness({ config: { trustedProxies: ['127.0.0.1'] } });

  it('counts in a sliding window: failures on both sides of a window’s edge lock', async () => {
    let now = Date.UTC(2026, 10, 21, 10, 0, 0);
    const lockout = new Lockout(
      h.services.store.db,
      { maxFailures: 10, windowMinutes: 15, lockMinutes: 15 },
      () => now,
    );
    const address = '203.0.113.50';
    await lockout.recordFailure(address);
    now += 14 * 60_000;
    for (let i = 0; i < 8; i++) await lockout.recordFailure(address);
    now += 2 * 60_000; // the first failure has left the window: 8 in it
    await lockout.check(address);
    await lockout.recordFailure(address);
    await lockout.check(address);
    await lockout.recordFailure(address); // 10 within the last 15 minutes
    await assert.rejects(lockout.check(address), (error: { code?: string }) => error.code === 'rate_limited');
  });

  it('takes X-Forwarded-For only as an address, in one spelling per address', async () => {
    const spellings = [
      '2001:DB8::1',
      '2001:db8:0:0:0:0:0:1',
      '2001:0db8::0001',
      '[2001:db8::1]',
      '[2001:db8::1]:443',
      '2001:db8:0::1',
      '2001:db8::0:1',
      '2001:DB8:0000:0000:0000:0000:0000:0001',
      '2001:db8::1%eth0',
      '2001:0DB8:0:0::1',
      '2001:db8:0:0::0:1',
      '2001:db8::00:1',
    ];
    const replies = [];
    for (const forwarded of spellings) {
      replies.push(
        await h.request({
          url: '/api/v1/test_connection/',
          headers: {
            'x-api-user': ADMIN_USER,
            'x-api-password': 'wrong-password',
            'x-forwarded-for': forwarded,
          },
        }),
      );
    }
    assert.deepEqual(
      replies.map((r) => r.statusCode),
      [...Array(10).fill(403), 429, 429],
    );
    const garbage = await h.request({
      url: '/api/v1/suspendacct/',
      headers: { ...FORM, 'x-forwarded-for': 'not-an-ip-1' },
      body: form({ apiuser: ADMIN_USER, apiauth: 'wrong-password', user: 'nobody1' }),
    });
    assert.equal(garbage.statusCode, 403);
    assert.equal((await lastAudit(h)).address, '127.0.0.1');
  });
});
