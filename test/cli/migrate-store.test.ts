import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { listAccounts } from '../../src/store/accounts.ts';
import { findApiUser } from '../../src/store/api-users.ts';
import { appendAudit, listAudit } from '../../src/store/audit.ts';
import { openStore } from '../../src/store/open.ts';
import { createChild, createReseller, type Harness, postgresForTest, setup } from '../helpers.ts';
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
    assert.match(result.stdout, /accounts 3, api_users 1, audit_log \d+/);
    const target = await openStore('', database.url);
    try {
      const before = await listAccounts(h.services.store.db, null);
      assert.deepEqual(await listAccounts(target.db, null), before);
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
