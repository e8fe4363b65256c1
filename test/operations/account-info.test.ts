// account_info (CONTRACT §14), the holder's side of the one pipeline: the holder's own record, its
// usage and every limit as used against allowed; for the holder, or the administrator or a
// reseller acting for it, and for no one else's account.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { execute } from '../../src/operations/execute.ts';
import type { Principal } from '../../src/operations/principal.ts';
import { apiOperations, customerOperations } from '../../src/operations/registry.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { deleteDomain, insertDomain } from '../../src/store/domains.ts';
import {
  createAccount,
  createChild,
  createReseller,
  type Harness,
  refusal,
  setup,
  summary,
} from '../helpers.ts';

describe('account_info', () => {
  let h: Harness;
  let alice: Principal;
  const admin: Principal = {
    kind: 'admin',
    via: 'api',
    apiAccount: { name: 'billing', id: 'billing-id' },
    address: '192.0.2.8',
  };
  let reseller: Principal;
  const accountInfo = customerOperations.find('account_info')!;
  const call = (principal: Principal, params: Record<string, string> = {}, actingFor?: string) =>
    execute(h.services, {
      operation: accountInfo,
      params: new Map(Object.entries(params).map(([name, value]) => [name, [value]])),
      address: principal.address,
      claimedUser: 'billing',
      identify: async () => principal,
      ...(actingFor !== undefined && { actingFor: [actingFor] }),
    });

  before(async () => {
    h = await setup();
    await createAccount(h, 'alice', { quota: '500', bandwidth: '2000', ftp: '3', sql: '0' });
    await createAccount(h, 'bob');
    await createReseller(h, 'res');
    await createChild(h, 'res', 'kid');
    const { db } = h.services.store;
    await db
      .updateTable('accounts')
      .set({ quota_usage: 120, bandwidth_usage: 45 })
      .where('user', '=', 'alice')
      .execute();
    const account = (await findAccount(db, 'alice'))!;
    alice = { kind: 'holder', via: 'password', account, credential: null, address: '192.0.2.9' };
    reseller = {
      kind: 'reseller',
      via: 'api',
      apiAccount: { name: 'billing', id: 'billing-id' },
      reseller: (await findAccount(db, 'res'))!,
      address: '192.0.2.7',
    };
  });
  after(() => h.close());

  it("answers the holder's record with its usage and every limit as used and allowed", async () => {
    const result = await call(alice);
    assert.equal(result.info, 'Account alice');
    assert.deepEqual(result.data, {
      ...(await summary(h, 'alice')),
      limits: {
        addondomains: { used: 0, limit: 'unlimited' },
        parkeddomains: { used: 0, limit: 'unlimited' },
        subdomains: { used: 0, limit: 'unlimited' },
        email: { used: 0, limit: 'unlimited' },
        ftp: { used: 0, limit: '3' },
        sql: { used: 0, limit: '0' },
        maillist: { used: 0, limit: 'unlimited' },
        quota: { used: 120, limit: '500' },
        bandwidth: { used: 45, limit: '2000' },
        cron_jobs: { used: 0, limit: String(h.services.config.cronJobs) },
      },
    });
  });

  it("counts the account's cron jobs against the configuration's cron_jobs", async () => {
    for (const command of ['true', 'date'])
      await execute(h.services, {
        operation: customerOperations.find('add_cron_job')!,
        params: new Map([
          ['schedule', ['*/5 * * * *']],
          ['command', [command]],
        ]),
        address: alice.address,
        claimedUser: 'alice',
        identify: async () => alice,
      });
    const { limits } = (await call(alice)).data as {
      limits: Record<string, { used: number; limit: string }>;
    };
    assert.deepEqual(limits.cron_jobs, { used: 2, limit: String(h.services.config.cronJobs) });
    const bob = (await call(admin, {}, 'bob')).data as { limits: Record<string, { used: number }> };
    assert.equal(bob.limits.cron_jobs!.used, 0, "another account's jobs are not counted");
  });

  it('counts the domains of each kind the account has against their limits', async () => {
    const made = new Date();
    await insertDomain(h.services.store.db, 'alice', {
      domain: 'shop.example',
      kind: 'addon',
      docroot: 'public_html/shop.example',
      createdAt: made,
    });
    for (const domain of ['alias-one.example', 'alias-two.example'])
      await insertDomain(h.services.store.db, 'alice', {
        domain,
        kind: 'parked',
        docroot: null,
        createdAt: made,
      });
    const { limits } = (await call(alice)).data as { limits: Record<string, { used: number }> };
    assert.deepEqual(
      [limits.addondomains!.used, limits.parkeddomains!.used, limits.subdomains!.used],
      [1, 2, 0],
      'the main domain is none of them',
    );
    for (const domain of ['shop.example', 'alias-one.example', 'alias-two.example'])
      await deleteDomain(h.services.store.db, 'alice', domain);
  });

  it('reads the account afresh, not as it was when the holder logged in', async () => {
    await h.call('editquota', { user: 'alice', quota: '600' });
    const data = (await call(alice)).data as { limits: { quota: { limit: string } } };
    assert.equal(data.limits.quota.limit, '600');
  });

  it("answers about the holder's own account, whatever account a parameter names", async () => {
    const data = (await call(alice, { user: 'bob' })).data as { user: string };
    assert.equal(data.user, 'alice');
  });

  it('answers the administrator and a reseller acting for a holder in their scope', async () => {
    assert.equal(((await call(admin, {}, 'bob')).data as { user: string }).user, 'bob');
    assert.equal(((await call(reseller, {}, 'kid')).data as { user: string }).user, 'kid');
  });

  it('is refused to the administrator and resellers for no holder, or one outside their scope', async () => {
    assert.deepEqual(await refusal(call(admin)), { status: 403, code: 'forbidden' });
    assert.deepEqual(await refusal(call(reseller)), { status: 403, code: 'forbidden' });
    assert.deepEqual(await refusal(call(reseller, {}, 'bob')), { status: 400, code: 'account_not_found' });
    assert.deepEqual(await refusal(call(alice, {}, 'bob')), { status: 403, code: 'forbidden' });
  });

  it("is an operation of the holder's side alone, as every one of them is, and no API operation serves a holder", async () => {
    assert.ok(customerOperations.find('account_info'));
    for (const operation of customerOperations.operations.values()) {
      assert.deepEqual(operation.audiences, ['holder'], operation.name);
      assert.equal(apiOperations.find(operation.name), undefined, operation.name);
    }
    for (const operation of apiOperations.operations.values()) {
      assert.ok(!operation.audiences.includes('holder'), operation.name);
      const params = { ...operation.example, user: 'bob' };
      const error = await refusal(
        execute(h.services, {
          operation,
          params: new Map(Object.entries(params).map(([name, value]) => [name, [value]])),
          address: alice.address,
          claimedUser: 'customer:alice',
          identify: async () => alice,
        }),
      );
      assert.deepEqual(error, { status: 403, code: 'forbidden' }, operation.name);
    }
    assert.equal((await findAccount(h.services.store.db, 'bob'))!.suspension, null);
  });
});
