import assert from 'node:assert/strict';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
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
  // A server's store (serve) moves its SQLite writer into a thread of its own: both are tested.
  const open = async (server = false): Promise<Store> => {
    database ??= await testDatabase();
    const store = await openStore(dataDir, database?.url ?? null);
    if (server) await store.startBackgroundWork((error) => assert.fail(error));
    return store;
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
        const written = readdirSync(join(import.meta.dirname, '../../src/store/migrations')).filter((f) =>
          /^[0-9]{4}-.*\.ts$/.test(f),
        );
        assert.equal(Number(migrations.rows[0]?.n), written.length);
      } finally {
        await store.close();
      }
    }
  });

  for (const server of [false, true]) {
    const as = server ? ' (a server’s store)' : '';
    it(`enforces unique user names and main domains, and known packages, itself${as}`, async () => {
      const store = await open(server);
      try {
        await store.db
          .insertInto('accounts')
          .values(row(`alice${Number(server)}`, `alice${Number(server)}.example`))
          .execute();
        await assert.rejects(
          store.db
            .insertInto('accounts')
            .values(row(`alice${Number(server)}`, 'other.example'))
            .execute(),
          (error) => ['user', 'primary key'].includes(String(uniqueViolation(error))),
        );
        await assert.rejects(
          store.db
            .insertInto('accounts')
            .values(row('bob', `alice${Number(server)}.example`))
            .execute(),
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

    it(`rolls a failed transaction back whole${as}`, async () => {
      const store = await open(server);
      try {
        await assert.rejects(
          store.db.transaction().execute(async (trx) => {
            await trx.insertInto('accounts').values(row('dave', 'dave.example')).execute();
            throw new Error('later step failed');
          }),
        );
        const found = await store.db
          .selectFrom('accounts')
          .select('user')
          .where('user', '=', 'dave')
          .execute();
        assert.deepEqual(found, []);
      } finally {
        await store.close();
      }
    });
  }

  // PostgreSQL is reached over a socket: nothing of it waits on the event loop.
  if (TEST_DIALECT === 'sqlite')
    it('keeps a server’s event loop free while its writer waits for the database', async () => {
      const store = await open(true);
      try {
        // Another process (the CLI, say) holds the write lock: the server's writer waits for it.
        const other = new DatabaseSync(join(dataDir, 'berth.db'));
        other.exec('PRAGMA busy_timeout = 10000');
        other.exec('BEGIN IMMEDIATE');
        const write = store.db.insertInto('accounts').values(row('erin', 'erin.example')).execute();
        const started = performance.now();
        await new Promise((resolve) => setTimeout(resolve, 50));
        const late = performance.now() - started - 50;
        other.exec('COMMIT');
        other.close();
        await write;
        assert.ok(late < 40, `a timer fired ${late.toFixed(0)} ms late while the writer waited`);
        const found = await store.db
          .selectFrom('accounts')
          .select('user')
          .where('user', '=', 'erin')
          .execute();
        assert.deepEqual(
          found.map((r) => r.user),
          ['erin'],
        );
      } finally {
        await store.close();
      }
    });
});
