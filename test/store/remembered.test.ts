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
import { changeCounter } from '../../src/store/prepared.ts';
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
});
