import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertRefused,
  assertSentence,
  createAccount,
  createAliceAndReseller,
  createChild,
  createReseller,
  errorOf,
  suiteHarness,
  summary,
} from '../helpers.ts';

describe('changecontactemail', () => {
  const h = suiteHarness({
    prepare: (h) => createAliceAndReseller(h),
  });

  it('changes the address and answers with the seed sentence', async () => {
    const reply = await h.callAs('res', 'changecontactemail', { user: 'alice', email: 'x@example.com' });
    assertRefused(reply, 400, 'account_not_found', 'user');
    const ok = await h.call('changecontactemail', { user: 'alice', email: 'Billing@Example.COM' });
    assert.deepEqual(ok.body.data, 'User contact email changed for alice => Billing@example.com');
    assert.equal((await summary(h, 'alice')).contactemail, 'Billing@example.com');
  });

  it('refuses a missing or bad address', async () => {
    assertRefused(await h.call('changecontactemail', { user: 'alice' }), 400, 'missing_parameter', 'email');
    assertRefused(
      await h.call('changecontactemail', { user: 'alice', email: 'nope' }),
      400,
      'invalid_parameter',
      'email',
    );
  });
});

describe('editquota', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res', { reseller_quota: '1000' });
      await createChild(h, 'res', 'kid', { quota: '100' });
      await createChild(h, 'res', 'kid2', { quota: '100' });
    },
  });

  it('changes the quota, in canonical form, and answers with the seed sentence', async () => {
    const reply = await h.call('editquota', { user: 'alice', quota: '0250' });
    assertSentence(reply, 'User disk quota changed for alice');
    assert.equal((await summary(h, 'alice')).quota, '250');
    await h.call('editquota', { user: 'alice', quota: 'UNLIMITED' });
    assert.equal((await summary(h, 'alice')).quota, 'unlimited');
  });

  it('refuses a missing or bad quota', async () => {
    assertRefused(await h.call('editquota', { user: 'alice' }), 400, 'missing_parameter', 'quota');
    assertRefused(
      await h.call('editquota', { user: 'alice', quota: 'lots' }),
      400,
      'invalid_parameter',
      'quota',
    );
    assertRefused(await h.call('editquota', { user: 'ghost', quota: '1' }), 400, 'account_not_found', 'user');
  });

  it("keeps a reseller's accounts within its quota limit", async () => {
    assert.equal((await h.callAs('res', 'editquota', { user: 'kid', quota: '900' })).statusCode, 200);
    assertRefused(
      await h.callAs('res', 'editquota', { user: 'kid', quota: '901' }),
      400,
      'reseller_limit',
      'quota',
    );
    assertRefused(
      await h.callAs('res', 'editquota', { user: 'kid', quota: 'unlimited' }),
      400,
      'reseller_limit',
      'quota',
    );
    assert.equal((await summary(h, 'kid')).quota, '900');
  });
});

describe('changepackage', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await h.call('addpkg', {
        name: 'gold',
        quota: '5000',
        bandwidth: '9000',
        feature: 'goldfeat',
        shell: 'on',
        sql: '3',
      });
      await h.call('addpkg', { name: 'huge', quota: '999999' });
      await createAccount(h, 'alice', { quota: '10', ftp: '2' });
      await createReseller(h, 'res', { reseller_quota: '6000' });
      await createChild(h, 'res', 'kid', { quota: '1', bandwidth: '1' });
    },
  });

  it("gives the account the package's limits, feature list and shell", async () => {
    const reply = await h.call('changepackage', { user: 'alice', package: 'gold' });
    assertSentence(reply, 'User hosting package changed for alice');
    const acct = await summary(h, 'alice');
    assert.equal(acct.package, 'gold');
    assert.equal(acct.feature, 'goldfeat');
    assert.equal(acct.quota, '5000');
    assert.equal(acct.ftp, 'unlimited');
    assert.equal(acct.sql, '3');
    assert.deepEqual(acct.shell, { shell: '/bin/bash', status: 'on' });
  });

  it('refuses an unknown package, missing parameters and unknown accounts', async () => {
    assertRefused(
      await h.call('changepackage', { user: 'alice', package: 'GOLD' }),
      400,
      'package_not_found',
      'package',
    );
    assertRefused(await h.call('changepackage', { user: 'alice' }), 400, 'missing_parameter', 'package');
    assertRefused(
      await h.call('changepackage', { user: 'ghost', package: 'gold' }),
      400,
      'account_not_found',
      'user',
    );
  });

  it("keeps a reseller's accounts within its limits", async () => {
    assertRefused(
      await h.callAs('res', 'changepackage', { user: 'kid', package: 'huge' }),
      400,
      'reseller_limit',
      'quota',
    );
    assertRefused(
      await h.callAs('res', 'changepackage', { user: 'kid', package: 'default' }),
      400,
      'reseller_limit',
      'quota',
    );
    assert.equal((await summary(h, 'kid')).package, 'default');
  });
});

describe('removeacct', () => {
  const h = suiteHarness({
    prepare: (h) => createAliceAndReseller(h, 'kid'),
  });

  it('removes the account and frees its user name and domain', async () => {
    const reply = await h.call('removeacct', { user: 'alice' });
    assertSentence(reply, 'User account removed alice');
    assert.deepEqual(errorOf(await h.call('accountsummary', { user: 'alice' })).code, 'account_not_found');
    await createAccount(h, 'alice');
  });

  it('refuses a reseller that still owns accounts, and a reseller removing itself or others', async () => {
    assertRefused(await h.call('removeacct', { user: 'res' }), 400, 'reseller_has_accounts', 'user');
    assert.deepEqual(errorOf(await h.callAs('res', 'removeacct', { user: 'res' })).code, 'forbidden');
    assert.deepEqual(
      errorOf(await h.callAs('res', 'removeacct', { user: 'alice' })).code,
      'account_not_found',
    );
    assert.equal((await h.callAs('res', 'removeacct', { user: 'kid' })).statusCode, 200);
    assert.equal((await h.call('removeacct', { user: 'res' })).statusCode, 200);
  });
});
