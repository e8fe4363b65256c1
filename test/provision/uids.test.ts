// The user component's uids below a throwaway system root: the system user and its group get the
// account's uid from the store, a removed account's group goes with it, and an id the system has
// already is refused, with nothing left behind.
import assert from 'node:assert/strict';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { findSystemUser, systemGroupExists } from '../../src/provision/linux/passwd.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { callCreateacct, createAccount, forSuite } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

describe('uids on the system', () => {
  const h = forSuite(linuxSetup);
  const storedUid = async (user: string) => (await findAccount(h.services.store.db, user))?.uid;

  it('createacct makes the user with the account’s uid and its group with the same gid', async () => {
    await createAccount(h, 'alice');
    const uid = await storedUid('alice');
    assert.ok(typeof uid === 'number' && uid >= 10000);
    const user = findSystemUser(h.root, 'alice')!;
    assert.deepEqual([user.uid, user.gid], [uid, uid]);
    assert.match(readFileSync(join(h.root, 'etc/group'), 'utf8'), new RegExp(`^alice:x:${uid}:$`, 'm'));
  });

  it('removeacct takes the user and its group; the name made again gets a new uid', async () => {
    const old = await storedUid('alice');
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    assert.equal(findSystemUser(h.root, 'alice'), undefined);
    assert.equal(systemGroupExists(h.root, 'alice'), false);
    await createAccount(h, 'alice');
    const uid = await storedUid('alice');
    assert.notEqual(uid, old);
    assert.equal(findSystemUser(h.root, 'alice')?.uid, uid);
  });

  it('refuses an id the system already has (a group made by hand), leaving nothing behind', async () => {
    const next = (await storedUid('alice'))! + 1;
    appendFileSync(join(h.root, 'etc/group'), `squatter:x:${next}:\n`);
    const reply = await callCreateacct(h, 'bob', { email: 'b@example.org' });
    assert.equal(reply.statusCode, 500);
    assert.equal(findSystemUser(h.root, 'bob'), undefined);
    assert.equal(systemGroupExists(h.root, 'bob'), false);
    // The next call takes the next uid: the one refused stays given.
    await createAccount(h, 'bob');
    assert.equal(await storedUid('bob'), next + 1);
    assert.equal(findSystemUser(h.root, 'bob')?.gid, next + 1);
  });
});
