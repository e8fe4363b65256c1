// list_ftp_accounts, add_ftp_account, change_ftp_password and remove_ftp_account (CONTRACT §14)
// through the one pipeline, as the administrator acting for a holder and as the holder, with the
// record driver: logins and directories checked, the ftp limit taken atomically, passwords kept as
// hashes alone, audit and events.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { ftpAccountsOf } from '../../src/store/ftp-accounts.ts';
import {
  callAsOwnHolder,
  callForHolder,
  createAccount,
  holderAuditRow,
  refusal,
  refused,
  suiteHarness,
  webhookTaking,
} from '../helpers.ts';

interface Ftp {
  login: string;
  directory: string;
  quota: string;
  created: string;
}

describe('the FTP accounts of an account, as its holder adds, changes and removes them', () => {
  const h = suiteHarness({
    config: {
      webhooks: [webhookTaking(['ftp_account.added', 'ftp_account.password_changed', 'ftp_account.removed'])],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', { domain: 'alice.example', ftp: '5' });
      await createAccount(h, 'bob', { domain: 'bob.example', ftp: '5' });
      await createAccount(h, 'carol', { domain: 'carol.example', ftp: '2' });
    },
  });
  const add = (user: string, params: Record<string, string>) =>
    callForHolder(h, user, 'add_ftp_account', params);

  it('add_ftp_account answers the login made, <login>@<main domain>, and list_ftp_accounts lists them', async () => {
    const made = await add('alice', {
      login: 'Designer',
      password: 'Str0ng-Secret',
      directory: 'public_html/',
      quota: '200',
    });
    assert.equal(made.info, 'FTP account designer@alice.example created');
    const ftp = made.data as Ftp;
    assert.deepEqual(
      { login: ftp.login, directory: ftp.directory, quota: ftp.quota },
      { login: 'designer@alice.example', directory: 'public_html', quota: '200' },
    );
    const home = (await add('alice', { login: 'backup@alice.example', password: 'An0ther-Secret' }))
      .data as Ftp;
    assert.deepEqual([home.directory, home.quota], ['', 'unlimited']);
    const listed = (await callForHolder(h, 'alice', 'list_ftp_accounts')).data as Ftp[];
    assert.deepEqual(
      listed.map((f) => f.login),
      ['backup@alice.example', 'designer@alice.example'],
    );
    assert.deepEqual((await callForHolder(h, 'bob', 'list_ftp_accounts')).data, []);
    // The password is kept as its SHA-512 crypt hash alone.
    const [stored] = await ftpAccountsOf(h.services.store.db, 'alice');
    assert.match(stored!.passwordHash, /^\$6\$/);
    assert.ok(!JSON.stringify(listed).includes('Secret'));
  });

  it('a bad login, directory or quota is 400 invalid_parameter, and nothing is added', async () => {
    for (const [param, params] of [
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: '/etc' }],
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: '../bob' }],
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: 'public_html/../../bob' }],
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: '~bob' }],
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: '.ssh' }],
      ['directory', { login: 'x1', password: 'Str0ng-Secret', directory: 'Maildir' }],
      ['login', { login: 'a b', password: 'Str0ng-Secret' }],
      ['login', { login: '-x', password: 'Str0ng-Secret' }],
      ['login', { login: 'x:0:0', password: 'Str0ng-Secret' }],
      ['login', { login: 'x1@alice.example', password: 'Str0ng-Secret' }],
      ['login', { login: 'bob', password: 'Str0ng-Secret' }],
      ['password', { login: 'x1', password: 'short' }],
      ['quota', { login: 'x1', password: 'Str0ng-Secret', quota: '0' }],
    ] as const) {
      const answer = await refused(add('bob', params));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', param], JSON.stringify(params));
    }
    assert.equal((await refused(add('bob', { login: 'x1' }))).code, 'missing_parameter');
    assert.deepEqual(await ftpAccountsOf(h.services.store.db, 'bob'), []);
  });

  it('a login the account has is 400 object_exists; another account may have the same name', async () => {
    assert.deepEqual(await refusal(add('alice', { login: 'designer', password: 'Str0ng-Secret' })), {
      status: 400,
      code: 'object_exists',
    });
    const bobs = (await add('bob', { login: 'designer', password: 'Str0ng-Secret' })).data as Ftp;
    assert.equal(bobs.login, 'designer@bob.example');
  });

  it('concurrent adds never pass the limit, which names itself', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) => add('carol', { login: `web${i}`, password: 'Str0ng-Secret' })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 2);
    for (const r of results)
      if (r.status === 'rejected') {
        const error = r.reason as ApiError;
        assert.equal(error.code, 'limit_reached');
        assert.match(error.message, /ftp limit \(2\)/);
      }
    assert.equal((await ftpAccountsOf(h.services.store.db, 'carol')).length, 2);
    const info = (await callForHolder(h, 'carol', 'account_info')).data as {
      limits: { ftp: { used: number; limit: string } };
    };
    assert.deepEqual(info.limits.ftp, { used: 2, limit: '2' });
  });

  it('change_ftp_password changes the hash of that login alone; another account’s login is not found', async () => {
    const before = await ftpAccountsOf(h.services.store.db, 'alice');
    const changed = await callForHolder(h, 'alice', 'change_ftp_password', {
      login: 'designer@alice.example',
      password: 'N3w-Str0ng-Secret',
    });
    assert.equal(changed.info, 'Password of designer@alice.example changed');
    const after = await ftpAccountsOf(h.services.store.db, 'alice');
    assert.notEqual(after[1]!.passwordHash, before[1]!.passwordHash);
    assert.equal(after[0]!.passwordHash, before[0]!.passwordHash);
    assert.deepEqual(
      await refusal(
        callForHolder(h, 'bob', 'change_ftp_password', { login: 'backup', password: 'Str0ng-Secret' }),
      ),
      { status: 400, code: 'object_not_found' },
    );
    const other = await refused(
      callForHolder(h, 'bob', 'change_ftp_password', {
        login: 'designer@alice.example',
        password: 'Str0ng-Secret',
      }),
    );
    assert.deepEqual([other.code, other.param], ['invalid_parameter', 'login']);
  });

  it('remove_ftp_account removes the login and makes room under the limit', async () => {
    const removed = await callForHolder(h, 'carol', 'remove_ftp_account', { login: 'web0' });
    assert.equal(removed.info, 'FTP account web0@carol.example removed');
    assert.equal((await ftpAccountsOf(h.services.store.db, 'carol')).length, 1);
    assert.deepEqual(await refusal(callForHolder(h, 'carol', 'remove_ftp_account', { login: 'web0' })), {
      status: 400,
      code: 'object_not_found',
    });
    await add('carol', { login: 'web9', password: 'Str0ng-Secret' });
  });

  it('the holder adds to its own account alone, audited as customer:<user>, events without passwords', async () => {
    const made = await callAsOwnHolder(h, 'bob', 'add_ftp_account', {
      login: 'mine',
      password: 'Str0ng-Secret',
      user: 'alice',
    });
    assert.equal((made.data as Ftp).login, 'mine@bob.example');
    assert.ok(!(await ftpAccountsOf(h.services.store.db, 'alice')).some((f) => f.login === 'mine'));
    const { db } = h.services.store;
    const events = (
      await db
        .selectFrom('events')
        .select(['type', 'payload'])
        .where('type', 'like', 'ftp_account.%')
        .execute()
    ).map((e) => ({ type: e.type, payload: e.payload }));
    assert.ok(events.some((e) => e.type === 'ftp_account.added'));
    assert.ok(events.some((e) => e.type === 'ftp_account.password_changed'));
    assert.ok(events.some((e) => e.type === 'ftp_account.removed'));
    for (const e of events) assert.ok(!e.payload.includes('Secret'), e.payload);
    const row = await holderAuditRow(h, 'add_ftp_account', 'bob');
    assert.deepEqual([row?.target, row?.status], ['bob', 200]);
  });
});
