// The API account and lock-out rows every call reads are answered from memory on SQLite, for as
// long as nothing has been committed since they were read: a change from this server, the command
// line or any other process applies from the next read on.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { after, describe, it } from 'node:test';
import { findApiUser, insertApiUser } from '../../src/store/api-users.ts';
import { findLock } from '../../src/store/auth-failures.ts';
import { openStore } from '../../src/store/open.ts';
import { changeCounter, sharedChangeCounter } from '../../src/store/prepared.ts';
import { tempDir } from '../helpers.ts';

describe('rows remembered behind the change counter (SQLite)', () => {
  const dataDir = tempDir('berth-remembered-');
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('sees every commit, its own and another process’s, from the next read on', async () => {
    const store = await openStore(dataDir);
    try {
      const now = new Date();
      await insertApiUser(store.db, {
        id: 'id-1',
        name: 'billing',
        passwordHash: 'hash-1',
        access: 'open',
        allowedIps: [],
        reseller: null,
        resellerId: null,
        createdAt: now,
        updatedAt: now,
        lastUsedAt: null,
      });
      assert.equal((await findApiUser(store.db, 'billing'))?.passwordHash, 'hash-1');
      assert.equal(await findLock(store.db, '198.51.100.7'), 0);

      // Nothing committed: the same answer, and the same counter.
      const before = changeCounter(store.db);
      assert.equal((await findApiUser(store.db, 'billing'))?.passwordHash, 'hash-1');
      assert.equal(changeCounter(store.db), before);

      // Another connection, as the command line would: a reset and a lock-out.
      const other = new DatabaseSync(join(dataDir, 'berth.db'));
      other.exec('PRAGMA busy_timeout = 10000');
      other.prepare("update api_users set password_hash = 'hash-2' where name = 'billing'").run();
      assert.notEqual(changeCounter(store.db), before);
      assert.equal((await findApiUser(store.db, 'billing'))?.passwordHash, 'hash-2');
      other.prepare("insert into auth_locks (address, locked_until_ms) values ('198.51.100.7', 99)").run();
      assert.equal(await findLock(store.db, '198.51.100.7'), 99);
      other.prepare("delete from api_users where name = 'billing'").run();
      assert.equal(await findApiUser(store.db, 'billing'), undefined);
      other.close();

      // This server's own writer.
      await store.db.deleteFrom('auth_locks').execute();
      assert.equal(await findLock(store.db, '198.51.100.7'), 0);
    } finally {
      await store.close();
    }
  });

  it('reads the counter once for a batch of calls, after the last of them asked', async () => {
    const store = await openStore(dataDir);
    const other = new DatabaseSync(join(dataDir, 'berth.db'));
    try {
      other.exec('PRAGMA busy_timeout = 10000');
      other.exec('create table if not exists batch_probe (n integer)');
      const before = changeCounter(store.db);
      // Asked before and after another process commits, in one turn of the event loop: both
      // calls get the counter as it is after the commit.
      const first = sharedChangeCounter(store.db);
      other.prepare('insert into batch_probe (n) values (1)').run();
      const second = sharedChangeCounter(store.db);
      assert.equal(first, second, 'one read serves the batch');
      assert.notEqual(await first, before);
      assert.equal(await first, changeCounter(store.db));
      // The next turn reads anew.
      other.prepare('insert into batch_probe (n) values (2)').run();
      const third = sharedChangeCounter(store.db);
      assert.notEqual(third, first);
      assert.notEqual(await third, await first);
      assert.equal(await third, changeCounter(store.db));
    } finally {
      other.close();
      await store.close();
    }
  });

  it('has no counter to share on a store without one', () => {
    const none = { getExecutor: () => ({}) } as unknown as Parameters<typeof sharedChangeCounter>[0];
    assert.equal(sharedChangeCounter(none), null);
  });
});
