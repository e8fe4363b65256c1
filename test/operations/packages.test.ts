import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  assertRefused,
  assertSentence,
  createAccount,
  createReseller,
  errorOf,
  suiteHarness,
} from '../helpers.ts';

describe('addpkg, editpkg and killpkg', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'res');
    },
  });

  it('addpkg answers the whole package, with unlimited and off for what is not given', async () => {
    const reply = await h.call('addpkg', { name: 'Gold', quota: '1000', ipv4: 'yes' });
    assert.deepEqual(reply.body, {
      data: {
        name: 'Gold',
        quota: '1000',
        bandwidth: 'unlimited',
        addondomains: 'unlimited',
        parkeddomains: 'unlimited',
        subdomains: 'unlimited',
        email_accounts: 'unlimited',
        ftp: 'unlimited',
        sql: 'unlimited',
        maillist: 'unlimited',
        mailquota: 'unlimited',
        feature: 'default',
        ipv4: 'on',
        ipv6: 'off',
        shell: 'off',
      },
      info: 'Package Gold created',
      status: 200,
    });
  });

  it('addpkg refuses a taken name, a missing name and bad values', async () => {
    assertRefused(await h.call('addpkg', { name: 'Gold' }), 400, 'package_exists', 'name');
    assertRefused(await h.call('addpkg', {}), 400, 'missing_parameter', 'name');
    assertRefused(await h.call('addpkg', { name: 'x', ftp: 'ten' }), 400, 'invalid_parameter', 'ftp');
  });

  it('editpkg changes the package and every account on it takes the values given', async () => {
    await h.call('addpkg', { name: 'silver', quota: '100', bandwidth: '100' });
    await createAccount(h, 'one', { package: 'silver' });
    await createAccount(h, 'two', { package: 'silver', bandwidth: '7' });
    const reply = await h.call('editpkg', { name: 'silver', quota: '200', shell: 'on' });
    assert.equal(reply.statusCode, 200);
    const data = reply.body.data as { package: Record<string, string>; accounts_updated: number };
    assert.equal(data.accounts_updated, 2);
    assert.equal(data.package.quota, '200');
    assert.equal(data.package.bandwidth, '100');
    for (const user of ['one', 'two']) {
      const { acct } = (await h.call('accountsummary', { user })).body.data as {
        acct: Record<string, unknown>;
      };
      assert.equal(acct.quota, '200');
      assert.deepEqual(acct.shell, { shell: '/bin/bash', status: 'on' });
    }
    const { acct } = (await h.call('accountsummary', { user: 'two' })).body.data as {
      acct: Record<string, unknown>;
    };
    assert.equal(acct.bandwidth, '7');
    assertRefused(await h.call('editpkg', { name: 'nosuch', quota: '1' }), 400, 'package_not_found', 'name');
  });

  it('killpkg deletes an unused package and refuses one in use', async () => {
    assertRefused(await h.call('killpkg', { name: 'silver' }), 400, 'package_in_use', 'name');
    const reply = await h.call('killpkg', { name: 'Gold' });
    assertSentence(reply, 'Package deleted Gold');
    assertRefused(await h.call('killpkg', { name: 'Gold' }), 400, 'package_not_found', 'name');
    assert.deepEqual(errorOf(await h.call('killpkg', { name: 'default' })).code, 'invalid_parameter');
  });

  it('are the administrator’s: 403 under a reseller', async () => {
    for (const op of ['addpkg', 'editpkg', 'killpkg']) {
      assert.deepEqual(
        errorOf(await h.callAs('res', op, { name: 'Res' })),
        { status: 403, code: 'forbidden', param: undefined },
        op,
      );
    }
  });
});
