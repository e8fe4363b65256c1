import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { uniqueViolation } from '../../src/store/errors.ts';
import { openStore, type Store } from '../../src/store/open.ts';
import { findPackage } from '../../src/store/packages.ts';
import { TEST_DIALECT, tempDir, testDatabase } from '../helpers.ts';

const row = (user: string, domain: string) => ({
  user,
  domain,
  contact_email: 'a@example.com',
  package: 'default',
  feature: 'default',
  owner: 'root',
  homedir: `/home/${user}`,
  language: 'en',
  theme: 'default',
  mailserver: 'local',
  dkim: 1,
  spf: 1,
  use_registrar_ns: 0,
  nameservers: '[]',
  setup_at: new Date().toISOString(),
  shell_enabled: 0,
  reseller: 0,
  selfown: 0,
  alpha: 0,
  suspended: 0,
  quota_usage: 0,
  bandwidth_usage: 0,
});

describe(`the store (${TEST_DIALECT})`, () => {
  const dataDir = tempDir('berth-store-');
  let database: Awaited<ReturnType<typeof testDatabase>>;
  const open = async (): Promise<Store> => {
    database ??= await testDatabase();
    return openStore(dataDir, database?.url ?? null);
  };
  after(async () => {
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('runs its migrations once and starts with the default package', async () => {
    for (let i = 0; i < 2; i++) {
      const store = await open();
      try {
        if (store.dialect === 'sqlite') {
          const journal = await sql<{ journal_mode: string }>`PRAGMA journal_mode`.execute(store.db);
          assert.equal(journal.rows[0]?.journal_mode, 'wal');
          const keys = await sql<{ foreign_keys: number }>`PRAGMA foreign_keys`.execute(store.db);
          assert.equal(keys.rows[0]?.foreign_keys, 1);
        }
        const pkg = await findPackage(store.db, 'default');
        assert.equal(pkg?.limits.quota, null);
        const migrations = await sql<{ n: number }>`select count(*) as n from kysely_migration`.execute(
          store.db,
        );
        assert.equal(Number(migrations.rows[0]?.n), 9);
      } finally {
        await store.close();
      }
    }
  });

  it('enforces unique user names and main domains, and known packages, itself', async () => {
    const store = await open();
    try {
      await store.db.insertInto('accounts').values(row('alice', 'alice.example')).execute();
      await assert.rejects(
        store.db.insertInto('accounts').values(row('alice', 'other.example')).execute(),
        (error) => ['user', 'primary key'].includes(String(uniqueViolation(error))),
      );
      await assert.rejects(
        store.db.insertInto('accounts').values(row('bob', 'alice.example')).execute(),
        (error) => uniqueViolation(error) === 'domain',
      );
      await assert.rejects(
        store.db
          .insertInto('accounts')
          .values({ ...row('carol', 'carol.example'), package: 'nosuch' })
          .execute(),
        /foreign key/i,
      );
    } finally {
      await store.close();
    }
  });

  it('rolls a failed transaction back whole', async () => {
    const store = await open();
    try {
      await assert.rejects(
        store.db.transaction().execute(async (trx) => {
          await trx.insertInto('accounts').values(row('dave', 'dave.example')).execute();
          throw new Error('later step failed');
        }),
      );
      const found = await store.db.selectFrom('accounts').select('user').where('user', '=', 'dave').execute();
      assert.deepEqual(found, []);
    } finally {
      await store.close();
    }
  });
});
