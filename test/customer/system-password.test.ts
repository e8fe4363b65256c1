// An account made before the store kept password hashes (docs/customer.md): its holder's first
// login on its own server is checked against the shadow file the linux driver wrote, and the hash
// is kept in the store from then on; a wrong password stays wrong.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { passwordHashOf } from '../../src/store/holder-credentials.ts';
import { assertRefused, callCreateacct, forSuite } from '../helpers.ts';
import { linuxSetup } from '../provision/system-root.ts';

describe('a holder whose account has no password hash in the store', () => {
  const h = forSuite(linuxSetup);
  const forget = (user: string) =>
    h.services.store.db
      .updateTable('accounts')
      .set({ password_hash: null })
      .where('user', '=', user)
      .execute();

  it('logs in with the password of its shadow line, which the store keeps from then on', async () => {
    assert.equal((await callCreateacct(h, 'olaf', { password: 'olaf-pass-12' })).statusCode, 200);
    await forget('olaf');
    const wrong = await h.callAsHolder(
      { user: 'olaf', password: 'not-olafs-pass', address: '10.2.0.1' },
      'account_info',
    );
    assertRefused(wrong, 403, 'forbidden', undefined);
    const right = await h.callAsHolder({ user: 'olaf', password: 'olaf-pass-12' }, 'account_info');
    assert.equal(right.statusCode, 200, JSON.stringify(right.body));
    assert.match((await passwordHashOf(h.services.store.db, 'olaf')) ?? '', /^\$6\$/);
  });

  it('is told its account is suspended, not that its password is wrong, while its shadow line is locked', async () => {
    assert.equal((await h.call('suspendacct', { user: 'olaf', reason: 'unpaid' })).statusCode, 200);
    await forget('olaf');
    const reply = await h.callAsHolder({ user: 'olaf', password: 'olaf-pass-12' }, 'account_info');
    assertRefused(reply, 403, 'account_suspended', undefined);
  });
});
