import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findAccount, toRow } from '../../src/store/accounts.ts';
import { openStore } from '../../src/store/open.ts';
import {
  assertRefused,
  createAccount,
  createChild,
  createReseller,
  suiteHarness,
  TEST_DIALECT,
} from '../helpers.ts';

type Accounts = { accounts: Record<string, Record<string, unknown>> };

describe('listaccts, accountsummary and listsuspended', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'zed');
      await createAccount(h, 'alice');
      await createReseller(h, 'res');
      await createChild(h, 'res', 'kid');
    },
  });

  it('listaccts lists every account by user name, with is_reseller and is_suspended', async () => {
    const reply = await h.call('listaccts');
    const { accounts } = reply.body.data as Accounts;
    assert.deepEqual(Object.keys(accounts), ['alice', 'kid', 'res', 'zed']);
    assert.equal(accounts.res?.is_reseller, 'yes');
    assert.equal(accounts.alice?.is_reseller, 'no');
    assert.equal(accounts.alice?.is_suspended, 'no');
    assert.equal(accounts.kid?.owner, 'res');
    assert.equal('quota_usage' in accounts.alice!, false);
  });

  it("listaccts under a reseller shows only the reseller's accounts", async () => {
    const { accounts } = (await h.callAs('res', 'listaccts')).body.data as Accounts;
    assert.deepEqual(Object.keys(accounts), ['kid']);
  });

  it('accountsummary answers one record with usage figures', async () => {
    const reply = await h.call('accountsummary', { user: 'alice' });
    const { acct } = reply.body.data as { acct: Record<string, unknown> };
    assert.equal(acct.user, 'alice');
    assert.equal(acct.is_suspended, 'no');
    assert.equal(acct.is_reseller, 'no');
    assert.equal(acct.quota_usage, 0);
    assert.equal(acct.bandwidth_usage, 0);
  });

  it('accountsummary refuses a missing user, an unknown one, and one outside the scope alike', async () => {
    assertRefused(await h.call('accountsummary'), 400, 'missing_parameter', 'user');
    const unknown = await h.callAs('res', 'accountsummary', { user: 'ghost' });
    const outside = await h.callAs('res', 'accountsummary', { user: 'alice' });
    assertRefused(outside, 400, 'account_not_found', 'user');
    assert.equal(outside.body.info, 'No account named alice exists.');
    assert.equal(unknown.body.info, 'No account named ghost exists.');
  });

  it('listsuspended lists suspended accounts with reason and time', async () => {
    await h.call('suspendacct', { user: 'zed', reason: 'Unpaid' });
    const { accounts } = (await h.call('listsuspended')).body.data as Accounts;
    assert.deepEqual(Object.keys(accounts), ['zed']);
    assert.equal(accounts.zed?.user, 'zed');
    assert.equal(accounts.zed?.reason, 'Unpaid');
    assert.match(
      String(accounts.zed?.suspendtime),
      /^[A-Z][a-z]+day, \d\d-[A-Z][a-z]{2}-\d{4} \d\d:\d\d:\d\d, \S+$/,
    );
    assert.deepEqual((await h.callAs('res', 'listsuspended')).body.data, { accounts: {} });
  });
});

describe('listpackages', () => {
  const h = suiteHarness();

  it('lists the names sorted by code point, comma-separated', async () => {
    for (const name of ['beta', 'Alpha', 'gold plan', 'Zeta']) await h.call('addpkg', { name });
    assert.deepEqual((await h.call('listpackages')).body.data, {
      packages: 'Alpha,Zeta,beta,default,gold plan',
    });
  });
});

describe('usagestatistics', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'alice');
      await createReseller(h, 'res', { reseller_limt: '5', reseller_quota: '1000' });
      await createChild(h, 'res', 'kid', { quota: '10', bandwidth: '10' });
      await h.services.store.db
        .updateTable('accounts')
        .set({ quota_usage: 7, bandwidth_usage: 30 })
        .where('user', '=', 'kid')
        .execute();
    },
  });

  it('adds usage to every record, reseller sums, and reseller_data for resellers only', async () => {
    const { accounts } = (await h.call('usagestatistics')).body.data as Accounts;
    assert.deepEqual(Object.keys(accounts), ['alice', 'kid', 'res']);
    assert.equal(accounts.kid?.quota_usage, 7);
    assert.equal(accounts.kid?.bandwidth_usage, 30);
    assert.equal(accounts.res?.quota_usage_reseller, 7);
    assert.equal(accounts.res?.bandwidth_usage_reseller, 30);
    assert.equal(accounts.alice?.quota_usage_reseller, 0);
    assert.equal('reseller_data' in accounts.alice!, false);
    assert.deepEqual(accounts.res?.reseller_data, {
      accounts: ['kid'],
      contactemail: 'res@example.org',
      ips: { ipv4: '192.0.2.1', ipv6: '' },
      name: 'res',
      nameservers: ['ns1.panel.example.net', 'ns2.panel.example.net'],
      reseller_bandwidth: 'unlimited',
      reseller_limt: '5',
      reseller_quota: '1000',
    });
  });

  it('shows a reseller only its scope', async () => {
    const { accounts } = (await h.callAs('res', 'usagestatistics')).body.data as Accounts;
    assert.deepEqual(Object.keys(accounts), ['kid']);
  });
});

describe('listaccts on a large store', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      const { db } = h.services.store;
      await createAccount(h, 'template');
      const base = (await findAccount(db, 'template'))!;
      await db.transaction().execute(async (trx) => {
        for (let i = 0; i < 1200; i++) {
          const user = `bulk${String(i).padStart(4, '0')}`;
          await trx
            .insertInto('accounts')
            .values(toRow({ ...base, user, domain: `${user}.example`, uid: null }))
            .execute();
        }
      });
    },
  });

  it('lists every account once, in order, across the pages it is built in', async () => {
    const reply = await h.call('listaccts');
    const { accounts } = reply.body.data as Accounts;
    const users = Object.keys(accounts);
    assert.equal(users.length, 1201);
    assert.deepEqual(users, [...users].sort());
    assert.equal(reply.body.info, '1201 account(s)');
    assert.equal(accounts.bulk0599?.domain, 'bulk0599.example');
  });

  it('never answers from a stale copy: changes here or from another connection show at once', async () => {
    const first = await h.call('listaccts');
    assert.equal(Object.keys((first.body.data as Accounts).accounts).length, 1201);
    await h.call('suspendacct', { user: 'bulk0007' });
    const second = (await h.call('listaccts')).body.data as Accounts;
    assert.equal(second.accounts.bulk0007?.is_suspended, 'yes');
    // Another process (the CLI, a second server) writing to the same file.
    const other = await openStore(h.dataDir);
    try {
      await other.db.deleteFrom('accounts').where('user', '=', 'bulk0008').execute();
    } finally {
      await other.close();
    }
    const third = (await h.call('listaccts')).body.data as Accounts;
    assert.equal('bulk0008' in third.accounts, TEST_DIALECT === 'postgres');
  });
});
