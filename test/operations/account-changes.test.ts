import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createAccount, createChild, createReseller, errorOf, suiteHarness, summary } from '../helpers.ts';

describe('changecontactemail', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res');
    },
  });

  it('changes the address and answers with the seed sentence', async () => {
    const reply = await h.callAs('res', 'changecontactemail', { user: 'alice', email: 'x@example.com' });
    assert.deepEqual(errorOf(reply), { status: 400, code: 'account_not_found', param: 'user' });
    const ok = await h.call('changecontactemail', { user: 'alice', email: 'Billing@Example.COM' });
    assert.deepEqual(ok.body.data, 'User contact email changed for alice => Billing@example.com');
    assert.equal((await summary(h, 'alice')).contactemail, 'Billing@example.com');
  });

  it('refuses a missing or bad address', async () => {
    assert.deepEqual(errorOf(await h.call('changecontactemail', { user: 'alice' })), {
      status: 400,
      code: 'missing_parameter',
      param: 'email',
    });
    assert.deepEqual(errorOf(await h.call('changecontactemail', { user: 'alice', email: 'nope' })), {
      status: 400,
      code: 'invalid_parameter',
      param: 'email',
    });
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
    assert.deepEqual(reply.body, {
      data: 'User disk quota changed for alice',
      info: 'User disk quota changed for alice',
      status: 200,
    });
    assert.equal((await summary(h, 'alice')).quota, '250');
    await h.call('editquota', { user: 'alice', quota: 'UNLIMITED' });
    assert.equal((await summary(h, 'alice')).quota, 'unlimited');
  });

  it('refuses a missing or bad quota', async () => {
    assert.deepEqual(errorOf(await h.call('editquota', { user: 'alice' })), {
      status: 400,
      code: 'missing_parameter',
      param: 'quota',
    });
    assert.deepEqual(errorOf(await h.call('editquota', { user: 'alice', quota: 'lots' })), {
      status: 400,
      code: 'invalid_parameter',
      param: 'quota',
    });
    assert.deepEqual(errorOf(await h.call('editquota', { user: 'ghost', quota: '1' })), {
      status: 400,
      code: 'account_not_found',
      param: 'user',
    });
  });

  it("keeps a reseller's accounts within its quota limit", async () => {
    assert.equal((await h.callAs('res', 'editquota', { user: 'kid', quota: '900' })).statusCode, 200);
    assert.deepEqual(errorOf(await h.callAs('res', 'editquota', { user: 'kid', quota: '901' })), {
      status: 400,
      code: 'reseller_limit',
      param: 'quota',
    });
    assert.deepEqual(errorOf(await h.callAs('res', 'editquota', { user: 'kid', quota: 'unlimited' })), {
      status: 400,
      code: 'reseller_limit',
      param: 'quota',
    });
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
    assert.deepEqual(reply.body, {
      data: 'User hosting package changed for alice',
      info: 'User hosting package changed for alice',
      status: 200,
    });
    const acct = await summary(h, 'alice');
    assert.equal(acct.package, 'gold');
    assert.equal(acct.feature, 'goldfeat');
    assert.equal(acct.quota, '5000');
    assert.equal(acct.ftp, 'unlimited');
    assert.equal(acct.sql, '3');
    assert.deepEqual(acct.shell, { shell: '/bin/bash', status: 'on' });
  });

  it('refuses an unknown package, missing parameters and unknown accounts', async () => {
    assert.deepEqual(errorOf(await h.call('changepackage', { user: 'alice', package: 'GOLD' })), {
      status: 400,
      code: 'package_not_found',
      param: 'package',
    });
    assert.deepEqual(errorOf(await h.call('changepackage', { user: 'alice' })), {
      status: 400,
      code: 'missing_parameter',
      param: 'package',
    });
    assert.deepEqual(errorOf(await h.call('changepackage', { user: 'ghost', package: 'gold' })), {
      status: 400,
      code: 'account_not_found',
      param: 'user',
    });
  });

  it("keeps a reseller's accounts within its limits", async () => {
    assert.deepEqual(errorOf(await h.callAs('res', 'changepackage', { user: 'kid', package: 'huge' })), {
      status: 400,
      code: 'reseller_limit',
      param: 'quota',
    });
    assert.deepEqual(errorOf(await h.callAs('res', 'changepackage', { user: 'kid', package: 'default' })), {
      status: 400,
      code: 'reseller_limit',
      param: 'quota',
    });
    assert.equal((await summary(h, 'kid')).package, 'default');
  });
});

describe('removeacct', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res');
      await createChild(h, 'res', 'kid');
    },
  });

  it('removes the account and frees its user name and domain', async () => {
    const reply = await h.call('removeacct', { user: 'alice' });
    assert.deepEqual(reply.body, {
      data: 'User account removed alice',
      info: 'User account removed alice',
      status: 200,
    });
    assert.deepEqual(errorOf(await h.call('accountsummary', { user: 'alice' })).code, 'account_not_found');
    await createAccount(h, 'alice');
  });

  it('refuses a reseller that still owns accounts, and a reseller removing itself or others', async () => {
    assert.deepEqual(errorOf(await h.call('removeacct', { user: 'res' })), {
      status: 400,
      code: 'reseller_has_accounts',
      param: 'user',
    });
    assert.deepEqual(errorOf(await h.callAs('res', 'removeacct', { user: 'res' })).code, 'forbidden');
    assert.deepEqual(
      errorOf(await h.callAs('res', 'removeacct', { user: 'alice' })).code,
      'account_not_found',
    );
    assert.equal((await h.callAs('res', 'removeacct', { user: 'kid' })).statusCode, 200);
    assert.equal((await h.call('removeacct', { user: 'res' })).statusCode, 200);
  });
});
