// The customer API (CONTRACT §14): an account's holder calls its operations on the customer
// listener with the account's password (HTTP Basic) or an API token (Bearer); the administrator
// and resellers call them for a holder at /api/account/<op>/. Each check is made as the holder of
// the account next door would try it. A call meant to fail comes from an address of its own, so
// that the failures of one check never lock out the next.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listAudit } from '../../src/store/audit.ts';
import {
  assertRefused,
  callCreateacct,
  createChild,
  createReseller,
  FORM,
  form,
  suiteHarness,
} from '../helpers.ts';

let addresses = 0;
/** Credentials from an address no other call used. */
const elsewhere = <T extends object>(credentials: T) => ({
  ...credentials,
  address: `10.1.0.${++addresses}`,
});

const ALICE = { user: 'alice', password: 'alice-pass-1' };
const BOB = { user: 'bob', password: 'bob-secret-22' };

describe('the customer API', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      for (const { user, password } of [ALICE, BOB]) await callCreateacct(h, user, { password });
      await createReseller(h, 'res');
      await createChild(h, 'res', 'carol');
    },
  });

  it('answers account_info to the holder with the password, and only its own account', async () => {
    const reply = await h.callAsHolder(ALICE, 'account_info');
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    const data = reply.body.data as { user: string; limits: Record<string, { used: number; limit: string }> };
    assert.equal(data.user, 'alice');
    assert.equal(data.limits.addondomains?.used, 0);
    // No parameter reaches another account: the holder's scope is its account, by construction.
    const other = await h.callAsHolder(ALICE, 'account_info', { user: 'bob' });
    assert.equal((other.body.data as { user: string }).user, 'alice');
  });

  it('refuses a wrong password, another account’s password, no credentials, and API-account credentials', async () => {
    const wrong = await h.callAsHolder(elsewhere({ user: 'alice', password: BOB.password }), 'account_info');
    assertRefused(wrong, 403, 'forbidden', undefined);
    const none = await h.request({
      url: '/api/account_info/',
      listener: 'customer',
      headers: FORM,
      body: '',
    });
    assertRefused(none, 403, 'forbidden', undefined);
    assert.match(none.body.info, /HTTP Basic/);
    const apiUser = await h.request({
      url: '/api/account_info/',
      listener: 'customer',
      headers: FORM,
      body: form({ apiuser: 'billing', apiauth: 'billing-secret-1' }),
    });
    assertRefused(apiUser, 403, 'forbidden', undefined);
    // The administrator's operations are not on this listener at all.
    const admin = await h.callAsHolder(ALICE, 'listaccts');
    assertRefused(admin, 404, 'unknown_operation', undefined);
  });

  it('locks an address out after repeated failures, as the API does', async () => {
    const remoteAddress = '10.9.8.7';
    const statuses: number[] = [];
    // Guesses at names of no account: the address is locked, no account is (lockout.test.ts).
    for (let i = 0; i < 12; i++) {
      const basic = `Basic ${Buffer.from(`nobody${i}:wrong-password-x`).toString('base64')}`;
      const reply = await h.request({
        url: '/api/account_info/',
        listener: 'customer',
        headers: { ...FORM, authorization: basic },
        body: '',
        remoteAddress,
      });
      statuses.push(reply.statusCode);
    }
    assert.ok(statuses.includes(429), statuses.join(','));
    // Even the right password waits out the lock.
    const right = await h.request({
      url: '/api/account_info/',
      listener: 'customer',
      headers: {
        ...FORM,
        authorization: `Basic ${Buffer.from(`${ALICE.user}:${ALICE.password}`).toString('base64')}`,
      },
      body: '',
      remoteAddress,
    });
    assert.equal(right.statusCode, 429);
  });

  it('makes, lists and removes API tokens; a token is shown once and works as Bearer until removed', async () => {
    const made = await h.callAsHolder(ALICE, 'add_token', { name: 'deploy' });
    assert.equal(made.statusCode, 200, JSON.stringify(made.body));
    const { token } = made.body.data as { token: string };
    assert.match(token, /^berth_[A-Za-z0-9_-]{43}$/);
    const again = await h.callAsHolder(ALICE, 'add_token', { name: 'deploy' });
    assertRefused(again, 400, 'object_exists', 'name');

    const listed = await h.callAsHolder({ token }, 'list_tokens');
    assert.equal(listed.statusCode, 200);
    const tokens = listed.body.data as { name: string; last_used: string | null }[];
    assert.deepEqual(
      tokens.map((t) => t.name),
      ['deploy'],
    );
    assert.ok(!JSON.stringify(listed.body).includes(token), 'the token is never listed');
    assert.ok(tokens[0]!.last_used, 'its use is recorded');

    // bob's token is bob's: it reaches bob's account, never alice's.
    const bobs = (await h.callAsHolder(BOB, 'add_token', { name: 'deploy' })).body.data as { token: string };
    const bobInfo = await h.callAsHolder({ token: bobs.token }, 'account_info');
    assert.equal((bobInfo.body.data as { user: string }).user, 'bob');
    assert.deepEqual(
      ((await h.callAsHolder(BOB, 'list_tokens')).body.data as { name: string }[]).map((t) => t.name),
      ['deploy'],
    );

    // The store keeps the token's hash, not the token.
    const rows = await h.services.store.db.selectFrom('api_tokens').selectAll().execute();
    assert.ok(!JSON.stringify(rows).includes(token));

    const removed = await h.callAsHolder(ALICE, 'remove_token', { name: 'deploy' });
    assert.equal(removed.statusCode, 200);
    assertRefused(await h.callAsHolder(elsewhere({ token }), 'account_info'), 403, 'forbidden', undefined);
    assertRefused(
      await h.callAsHolder(ALICE, 'remove_token', { name: 'deploy' }),
      400,
      'object_not_found',
      'name',
    );
    assertRefused(
      await h.callAsHolder(elsewhere({ token: 'berth_not-a-token' }), 'account_info'),
      403,
      'forbidden',
      undefined,
    );
  });

  it('changes the password with the current one; a wrong current one changes nothing', async () => {
    const wrong = await h.callAsHolder(elsewhere(BOB), 'change_password', {
      current_password: 'not-bobs-password',
      password: 'bob-new-pass-33',
    });
    assertRefused(wrong, 400, 'invalid_parameter', 'current_password');
    assert.equal((await h.callAsHolder(BOB, 'account_info')).statusCode, 200);

    const changed = await h.callAsHolder(BOB, 'change_password', {
      current_password: BOB.password,
      password: 'bob-new-pass-33',
    });
    assert.equal(changed.statusCode, 200, JSON.stringify(changed.body));
    assertRefused(await h.callAsHolder(elsewhere(BOB), 'account_info'), 403, 'forbidden', undefined);
    const now = { user: 'bob', password: 'bob-new-pass-33' };
    assert.equal((await h.callAsHolder(now, 'account_info')).statusCode, 200);

    // passwd from billing sets what the holder logs in with, too.
    assert.equal((await h.call('passwd', { user: 'bob', password: BOB.password })).statusCode, 200);
    assertRefused(await h.callAsHolder(elsewhere(now), 'account_info'), 403, 'forbidden', undefined);
    assert.equal((await h.callAsHolder(BOB, 'account_info')).statusCode, 200);
  });

  it('does not undo a passwd made while the holder’s change of password was on its way', async () => {
    await callCreateacct(h, 'gina', { password: 'gina-pass-111' });
    // The administrator resets the password between the check of the current one and the change.
    const crypt = h.services.crypt;
    const hash = crypt.hash.bind(crypt);
    crypt.hash = async (password: string) => {
      crypt.hash = hash;
      assert.equal((await h.call('passwd', { user: 'gina', password: 'admin-reset-222' })).statusCode, 200);
      return hash(password);
    };
    const raced = await h.callAsHolder({ user: 'gina', password: 'gina-pass-111' }, 'change_password', {
      current_password: 'gina-pass-111',
      password: 'attacker-pass-333',
    });
    assertRefused(raced, 400, 'invalid_parameter', 'current_password');
    assert.equal(
      (await h.callAsHolder({ user: 'gina', password: 'admin-reset-222' }, 'account_info')).statusCode,
      200,
    );
  });

  it('refuses a suspended account’s holder with account_suspended, only once the password is right', async () => {
    assert.equal((await h.call('suspendacct', { user: 'bob', reason: 'unpaid' })).statusCode, 200);
    assertRefused(await h.callAsHolder(BOB, 'account_info'), 403, 'account_suspended', undefined);
    const guess = await h.callAsHolder(elsewhere({ user: 'bob', password: 'a-wrong-guess' }), 'account_info');
    assertRefused(guess, 403, 'forbidden', undefined);
    const token = (await h.callAsHolder(ALICE, 'add_token', { name: 'ci' })).body.data as { token: string };
    assert.equal((await h.call('unsuspendacct', { user: 'bob' })).statusCode, 200);
    assert.equal((await h.callAsHolder(BOB, 'account_info')).statusCode, 200);
    assert.equal((await h.callAsHolder({ token: token.token }, 'account_info')).statusCode, 200);
  });

  it('keeps no token for an Idempotency-Key: the key is not honoured for add_token', async () => {
    const send = () =>
      h.request({
        url: '/api/add_token/',
        listener: 'customer',
        headers: {
          ...FORM,
          'idempotency-key': 'token-key-1',
          authorization: `Basic ${Buffer.from(`${ALICE.user}:${ALICE.password}`).toString('base64')}`,
        },
        body: form({ name: 'keyed' }),
      });
    const first = await send();
    assert.equal(first.statusCode, 200);
    const { token } = first.body.data as { token: string };
    assertRefused(await send(), 400, 'object_exists', 'name');
    const kept = await h.services.store.db.selectFrom('idempotency_keys').selectAll().execute();
    assert.ok(!JSON.stringify(kept).includes(token));
  });

  it('audits a holder’s changes as customer:<user>, never with a password or token', async () => {
    const made = await h.callAsHolder(ALICE, 'add_token', { name: 'audited' });
    const { token } = made.body.data as { token: string };
    const entries = await listAudit(h.services.store.db, { limit: 200 });
    const entry = entries.find((e) => e.operation === 'add_token' && e.status === 200);
    assert.equal(entry?.api_user, 'customer:alice');
    assert.equal(entry?.principal, 'holder');
    assert.ok(!JSON.stringify(entries).includes(token));
    assert.ok(!JSON.stringify(entries).includes(ALICE.password));
  });

  it('lets the administrator and a reseller act for a holder in their scope at /api/account/<op>/', async () => {
    const info = await h.callForHolder('alice', 'account_info');
    assert.equal(info.statusCode, 200, JSON.stringify(info.body));
    assert.equal((info.body.data as { user: string }).user, 'alice');
    assertRefused(await h.callForHolder('nobody', 'account_info'), 400, 'account_not_found', 'user');
    const noUser = await h.request({
      url: '/api/account/account_info/',
      headers: FORM,
      body: form({ apiuser: 'billing', apiauth: 'billing-secret-1' }),
    });
    assertRefused(noUser, 400, 'missing_parameter', 'user');
    // Like any parameter, the account's name given twice is refused, not read as missing.
    const twice = await h.request({
      url: '/api/account/account_info/',
      headers: FORM,
      body: 'apiuser=billing&apiauth=billing-secret-1&user=alice&user=carol',
    });
    assertRefused(twice, 400, 'invalid_parameter', 'user');

    const reseller = (user: string) =>
      h.request({
        url: '/api/account/account_info/',
        listener: 'reseller',
        headers: {
          ...FORM,
          'x-api-user': 'billing',
          'x-api-password': 'billing-secret-1',
          'x-reseller': 'res',
        },
        body: form({ user }),
      });
    assert.equal((await reseller('carol')).statusCode, 200);
    // Outside the reseller's scope, the account does not exist.
    assertRefused(await reseller('alice'), 400, 'account_not_found', 'user');

    // Acting for a holder changes nothing of what the operation is: the holder's own password.
    const acting = await h.callForHolder('alice', 'change_password', {
      current_password: 'not-alices',
      password: 'alice-pass-9',
    });
    assertRefused(acting, 400, 'invalid_parameter', 'current_password');
    // A holder's operation is not an administrator's at /api/<op>/.
    assertRefused(await h.call('account_info', { user: 'alice' }), 404, 'unknown_operation', undefined);
  });

  it('forgets a removed account’s tokens: a new account of the same name is another holder’s', async () => {
    await callCreateacct(h, 'dave', { password: 'dave-pass-111' });
    const made = await h.callAsHolder({ user: 'dave', password: 'dave-pass-111' }, 'add_token', {
      name: 't',
    });
    const { token } = made.body.data as { token: string };
    assert.equal((await h.call('removeacct', { user: 'dave' })).statusCode, 200);
    assertRefused(await h.callAsHolder(elsewhere({ token }), 'account_info'), 403, 'forbidden', undefined);
    await callCreateacct(h, 'dave', { password: 'dave-pass-222' });
    assertRefused(await h.callAsHolder(elsewhere({ token }), 'account_info'), 403, 'forbidden', undefined);
    const list = await h.callAsHolder({ user: 'dave', password: 'dave-pass-222' }, 'list_tokens');
    assert.deepEqual(list.body.data, []);
  });
});
