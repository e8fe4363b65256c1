import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listAccounts } from '../../src/store/accounts.ts';
import { findApiUser } from '../../src/store/api-users.ts';
import { appendAudit, listAudit } from '../../src/store/audit.ts';
import { domainsOf } from '../../src/store/domains.ts';
import { openStore, type Store } from '../../src/store/open.ts';
import {
  callForHolder,
  createChild,
  createReseller,
  type Harness,
  postgresForTest,
  setup,
} from '../helpers.ts';
import { berth } from '../process.ts';

describe('berth migrate-store', () => {
  let h: Harness;
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  before(async () => {
    // The source is always SQLite, whatever the pass.
    const saved = process.env.BERTH_TEST_DATABASE_URL;
    delete process.env.BERTH_TEST_DATABASE_URL;
    try {
      h = await setup();
    } finally {
      if (saved !== undefined) process.env.BERTH_TEST_DATABASE_URL = saved;
    }
    await createReseller(h, 'res', { reseller_limt: '5' });
    for (const user of ['kid1', 'kid2']) await createChild(h, 'res', user, { quota: '10' });
    await h.call('suspendacct', { user: 'kid1', reason: 'Unpaid' });
    await h.call('addpkg', { name: 'Gold', quota: '100' });
    // The holder's side too: its rows are the account's as much as the account's own row.
    await callForHolder(h, 'kid2', 'add_domain', { domain: 'shop.example', type: 'addon' });
    await callForHolder(h, 'kid2', 'add_mailbox', { email: 'box@kid2.example', password: 'Box-Secret-77' });
    await callForHolder(h, 'kid2', 'add_forwarder', { email: 'fw@kid2.example', to: 'a@b.example' });
    database = await postgresForTest();
  });
  after(async () => {
    await h.close();
    await database.release();
  });

  it('moves every row into PostgreSQL and checks the counts', async () => {
    const result = await berth([
      'migrate-store',
      '--from',
      `sqlite:${join(h.dataDir, 'berth.db')}`,
      '--to',
      database.url,
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\baccounts 3\b/);
    assert.match(result.stdout, /\bdomains 4, mailboxes 1, forwarders 1\b/);
    assert.match(result.stdout, /\buid_mark 1\b/);
    const target = await openStore('', database.url);
    try {
      const before = await listAccounts(h.services.store.db, null);
      assert.deepEqual(await listAccounts(target.db, null), before);
      for (const user of ['kid1', 'kid2'])
        assert.deepEqual(await domainsOf(target.db, user), await domainsOf(h.services.store.db, user));
      // The mark of uids given: none is given again after the move.
      const mark = async (store: { db: Store['db'] }) =>
        Number((await store.db.selectFrom('uid_mark').select('next_uid').executeTakeFirstOrThrow()).next_uid);
      assert.equal(await mark(target), await mark(h.services.store));
    } finally {
      await target.close();
    }
  });

  it('keeps API users with their hashes, and the audit ids go on after the copied ones', async () => {
    const target = await openStore('', database.url);
    try {
      const source = await findApiUser(h.services.store.db, 'billing');
      assert.deepEqual(await findApiUser(target.db, 'billing'), source);
      const [newest] = await listAudit(h.services.store.db, { limit: 1 });
      await appendAudit(target.db, { ...newest!, id: undefined, operation: 'after-migration' });
      const [appended] = await listAudit(target.db, { limit: 1 });
      assert.equal(appended?.operation, 'after-migration');
      assert.ok(appended!.id > newest!.id);
    } finally {
      await target.close();
    }
    const again = await berth(['migrate-store', '--from', `sqlite:${h.dataDir}`, '--to', database.url]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not empty/);
  });

  it('refuses a source that is not an SQLite store', async () => {
    const missing = await berth([
      'migrate-store',
      '--from',
      'sqlite:/nonexistent/berth.db',
      '--to',
      database.url,
    ]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no SQLite store/);
    const usage = await berth(['migrate-store', '--from', 'mysql:x', '--to', database.url]);
    assert.equal(usage.code, 2);
  });
});
