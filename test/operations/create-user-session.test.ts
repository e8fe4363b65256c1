// create_user_session (CONTRACT §14): single sign-on from billing. A URL on this server's customer
// listener that logs a browser into an account's panel once, within 120 seconds, on the page asked
// for; for an account in the caller's scope, never for a suspended one; audited, and its token in no
// log line, no audit entry and no row of the store.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger } from '../../src/services.ts';
import { listAudit } from '../../src/store/audit.ts';
import { takeSsoToken } from '../../src/store/sso-tokens.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  assertErrorAnswer,
  assertRefused,
  createAliceAndReseller,
  createChild,
  createReseller,
  FORM,
  form,
  type Reply,
  suiteHarness,
  TEST_DIALECT,
} from '../helpers.ts';

const URL_SHAPE = /^https:\/\/panel\.example\.net:2083\/login\/sso\?token=([A-Za-z0-9_-]{43})$/;

/** The token in a create_user_session answer; fails the test if the answer is not a URL. */
function tokenOf(reply: Reply): string {
  assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
  const { url } = reply.body.data as { url: string };
  const token = URL_SHAPE.exec(url)?.[1];
  assert.ok(token, url);
  return token;
}

describe(`create_user_session (${TEST_DIALECT})`, () => {
  const lines: string[] = [];
  const h = suiteHarness({
    // At debug, every request has its line.
    log: createLogger(
      'debug',
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    ),
    prepare: async (h) => {
      await createAliceAndReseller(h, 'kid');
      await createReseller(h, 'other');
      await createChild(h, 'other', 'stranger');
    },
  });
  const db = () => h.services.store.db;
  const clock = { now: new Date('2026-11-25T10:00:00.000Z') };
  const at = (seconds: number) => new Date(clock.now.getTime() + seconds * 1000);
  const tokenRows = () => db().selectFrom('sso_tokens').selectAll().execute();

  it('answers a URL on the customer listener of this server and when it stops working', async () => {
    h.services.now = () => clock.now;
    const reply = await h.call('create_user_session', { user: 'alice', page: 'domains' });
    tokenOf(reply);
    assert.deepEqual(Object.keys(reply.body.data as object).sort(), ['expires', 'url']);
    assert.equal((reply.body.data as { expires: number }).expires, clock.now.getTime() / 1000 + 120);
    assert.equal(reply.body.info, 'Single sign-on URL for alice, valid for 120 seconds');
  });

  it('opens the page asked for once, then never again', async () => {
    const token = tokenOf(await h.call('create_user_session', { user: 'alice', page: 'email' }));
    assert.deepEqual(await takeSsoToken(db(), token, at(5)), { user: 'alice', page: 'email' });
    assert.equal(await takeSsoToken(db(), token, at(6)), null);
    assert.equal(await takeSsoToken(db(), `${token.slice(0, -1)}x`, at(6)), null);
  });

  it('opens the home page when no page is asked for', async () => {
    const token = tokenOf(await h.call('create_user_session', { user: 'alice' }));
    assert.deepEqual(await takeSsoToken(db(), token, at(1)), { user: 'alice', page: 'home' });
  });

  it('refuses a page the panel does not have, and makes no token', async () => {
    const before = (await tokenRows()).length;
    for (const page of ['Domains', 'settings', '../home'])
      assertRefused(
        await h.call('create_user_session', { user: 'alice', page }),
        400,
        'invalid_parameter',
        'page',
      );
    assertRefused(await h.call('create_user_session', {}), 400, 'missing_parameter', 'user');
    assert.equal((await tokenRows()).length, before);
  });

  it('works within 120 seconds and not after; expired tokens are cleaned up', async () => {
    const early = tokenOf(await h.call('create_user_session', { user: 'alice' }));
    const late = tokenOf(await h.call('create_user_session', { user: 'alice', page: 'ftp' }));
    assert.deepEqual(await takeSsoToken(db(), early, at(119.999)), { user: 'alice', page: 'home' });
    assert.equal(await takeSsoToken(db(), late, at(120)), null);
    assert.deepEqual(await tokenRows(), [], 'the late token is gone, not only refused');
  });

  it('keeps only a hash of the token in the store', async () => {
    const token = tokenOf(await h.call('create_user_session', { user: 'alice', page: 'security' }));
    const rows = await tokenRows();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]?.user, 'alice');
    assert.equal(rows[0]?.page, 'security');
    assert.match(rows[0]!.token_hash, /^[0-9a-f]{64}$/);
    const stored = JSON.stringify(rows);
    assert.ok(!stored.includes(token), 'the token is in the store');
    assert.ok(!stored.includes(Buffer.from(token, 'base64url').toString('hex')), 'its bytes are');
    assert.ok(await takeSsoToken(db(), token, at(2)));
  });

  it('of many concurrent takes of one token, exactly one gets in', async () => {
    const token = tokenOf(await h.call('create_user_session', { user: 'alice' }));
    const taken = await Promise.all(Array.from({ length: 20 }, () => takeSsoToken(db(), token, at(3))));
    assert.equal(taken.filter((grant) => grant !== null).length, 1);
  });

  it('lets a reseller sign in to its own accounts only; the others do not exist for it', async () => {
    const token = tokenOf(await h.callAs('res', 'create_user_session', { user: 'kid' }));
    assert.deepEqual(await takeSsoToken(db(), token, at(1)), { user: 'kid', page: 'home' });
    for (const user of ['stranger', 'alice', 'other', 'ghost']) {
      const reply = await h.callAs('res', 'create_user_session', { user });
      assertRefused(reply, 400, 'account_not_found', 'user');
      assert.equal(reply.body.info, `No account named ${user} exists.`);
    }
    assert.deepEqual(await tokenRows(), []);
  });

  it('lets the administrator sign in to any account', async () => {
    for (const user of ['kid', 'stranger', 'other']) {
      const token = tokenOf(await h.call('create_user_session', { user }));
      assert.deepEqual(await takeSsoToken(db(), token, at(1)), { user, page: 'home' });
    }
  });

  it('refuses a suspended account with 403 account_suspended and no URL', async () => {
    assert.equal((await h.call('suspendacct', { user: 'kid', reason: 'Unpaid' })).statusCode, 200);
    for (const reply of [
      await h.call('create_user_session', { user: 'kid' }),
      await h.callAs('res', 'create_user_session', { user: 'kid', page: 'domains' }),
    ])
      assertErrorAnswer(reply, 403, 'account_suspended', 'The account kid is suspended.');
    assert.deepEqual(await tokenRows(), []);
    assert.equal((await h.call('unsuspendacct', { user: 'kid' })).statusCode, 200);
    tokenOf(await h.call('create_user_session', { user: 'kid' }));
  });

  it('is audited, success and refusal, and its token is in no audit entry and no log line', async () => {
    lines.length = 0;
    const token = tokenOf(await h.call('create_user_session', { user: 'alice', page: 'cron' }));
    await h.call('create_user_session', { user: 'ghost' });
    const [refused, made] = await listAudit(db(), { limit: 2 });
    assert.deepEqual(
      [made, refused].map((entry) => [entry?.operation, entry?.target, entry?.status, entry?.code]),
      [
        ['create_user_session', 'alice', 200, null],
        ['create_user_session', 'ghost', 400, 'account_not_found'],
      ],
    );
    const audit = JSON.stringify(await listAudit(db(), { limit: 1000 }));
    assert.ok(!audit.includes(token));
    assert.ok(lines.length >= 2, 'the requests were logged');
    assert.ok(
      lines.every((line) => !line.includes(token) && !line.includes('token=')),
      lines.join(''),
    );
  });

  it('acts anew for each call with one Idempotency-Key, keeping no answer with a token', async () => {
    const call = () =>
      h.request({
        url: '/api/v1/create_user_session/',
        headers: { ...FORM, 'idempotency-key': 'sso-1' },
        body: form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD, user: 'alice' }),
      });
    const [first, second] = [tokenOf(await call()), tokenOf(await call())];
    assert.notEqual(first, second);
    const kept = JSON.stringify(await db().selectFrom('idempotency_keys').selectAll().execute());
    assert.ok(!kept.includes(first) && !kept.includes(second));
    assert.ok(await takeSsoToken(db(), first, at(1)));
    assert.ok(await takeSsoToken(db(), second, at(1)));
  });

  it('removeacct forgets the tokens of the account, so a new account of that name is not opened', async () => {
    const token = tokenOf(await h.callAs('res', 'create_user_session', { user: 'kid' }));
    assert.equal((await h.callAs('res', 'removeacct', { user: 'kid' })).statusCode, 200);
    await createChild(h, 'other', 'kid');
    assert.equal(await takeSsoToken(db(), token, at(1)), null);
  });
});

describe('create_user_session on a server with its own customer port', () => {
  const h = suiteHarness({
    config: { customerPort: 8443, hostName: 'hosting.example.org' },
    prepare: (h) => createAliceAndReseller(h),
  });

  it('names the host name and the customer port of the configuration', async () => {
    const reply = await h.call('create_user_session', { user: 'alice' });
    const { url } = reply.body.data as { url: string };
    assert.match(url, /^https:\/\/hosting\.example\.org:8443\/login\/sso\?token=[A-Za-z0-9_-]{43}$/);
  });
});
