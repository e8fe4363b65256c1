// The FTP accounts of accounts in the store (CONTRACT §14): a login once per account (another
// account may use the same name: its main domain makes the whole login unique), kept with its hash,
// directory and quota; a failed change puts them back as they were; they go with the account.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uniqueViolation } from '../../src/store/errors.ts';
import {
  deleteFtpAccount,
  type FtpAccount,
  ftpAccountsOf,
  insertFtpAccount,
  updateFtpPassword,
} from '../../src/store/ftp-accounts.ts';
import { holdAccounts, restoreAccounts, trackWrites } from '../../src/store/pending.ts';
import { createAccount, suiteHarness, TEST_DIALECT } from '../helpers.ts';

const at = new Date('2026-01-02T03:04:05.000Z');
const ftp = (login: string, change: Partial<FtpAccount> = {}): FtpAccount => ({
  login,
  passwordHash: '$6$salt$hash',
  directory: 'public_html',
  quota: 100,
  createdAt: at,
  ...change,
});

describe(`the FTP accounts of accounts (${TEST_DIALECT})`, () => {
  const h = suiteHarness();
  const db = () => h.services.store.db;

  it('keeps an FTP account as it was given, each login once per account', async () => {
    await createAccount(h, 'alice', { domain: 'alice.example' });
    await createAccount(h, 'bob', { domain: 'bob.example' });
    await insertFtpAccount(db(), 'alice', ftp('web'));
    await insertFtpAccount(db(), 'alice', ftp('backup', { directory: '', quota: null }));
    await insertFtpAccount(db(), 'bob', ftp('web'));
    assert.deepEqual(await ftpAccountsOf(db(), 'alice'), [
      ftp('backup', { directory: '', quota: null }),
      ftp('web'),
    ]);
    const error = await insertFtpAccount(db(), 'alice', ftp('web')).catch((e: unknown) => e);
    assert.notEqual(uniqueViolation(error), null);
    await updateFtpPassword(db(), 'alice', 'web', '$6$other$hash');
    assert.equal((await ftpAccountsOf(db(), 'alice'))[1]!.passwordHash, '$6$other$hash');
    assert.equal((await ftpAccountsOf(db(), 'bob'))[0]!.passwordHash, '$6$salt$hash');
  });

  it('a change that fails puts the FTP accounts back as they were', async () => {
    await db()
      .transaction()
      .execute(async (trx) => {
        trackWrites(trx);
        await deleteFtpAccount(trx, 'bob', 'web');
        await insertFtpAccount(trx, 'bob', ftp('new'));
        await holdAccounts(trx, 'held-ftp', h.services.config.nodeName, ['bob']);
      });
    assert.deepEqual(
      (await ftpAccountsOf(db(), 'bob')).map((f) => f.login),
      ['new'],
    );
    await restoreAccounts(db(), 'held-ftp');
    assert.deepEqual(await ftpAccountsOf(db(), 'bob'), [ftp('web')]);
  });

  it('removeacct takes them with the account', async () => {
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    assert.deepEqual(await ftpAccountsOf(db(), 'alice'), []);
    assert.equal((await ftpAccountsOf(db(), 'bob')).length, 1);
  });
});
