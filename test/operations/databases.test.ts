// The MariaDB databases and database users of an account (CONTRACT §14) through the one pipeline,
// with the record driver: the prefix added when missing (never another account's), the suffix
// checked, the sql limit counting databases alone and taken atomically, grants and revokes inside
// the account, and a user's password kept as MariaDB's hash only, never audited or sent.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { databasesOf, databaseUsersOf } from '../../src/store/databases.ts';
import { callForHolder, createAccount, refused, suiteHarness, webhookTaking } from '../helpers.ts';

const SECRET = 'Database-Secret-7';
const nativeHash = (password: string) =>
  `*${createHash('sha1').update(createHash('sha1').update(password).digest()).digest('hex').toUpperCase()}`;

describe('the databases of an account, as its holder makes them', () => {
  const h = suiteHarness({
    config: {
      databaseUsers: 5,
      webhooks: [
        webhookTaking([
          'database.added',
          'database_user.added',
          'database_user.password_changed',
          'database.granted',
        ]),
      ],
    },
    prepare: async (h) => {
      await createAccount(h, 'alice', { domain: 'alice.example', sql: '2' });
      await createAccount(h, 'bob', { domain: 'bob.example', sql: 'unlimited' });
    },
  });
  const call = (user: string, op: string, params: Record<string, string> = {}) =>
    callForHolder(h, user, op, params);

  it('add_database prefixes the name when it is missing and answers the database', async () => {
    const made = await call('alice', 'add_database', { name: 'wp' });
    assert.equal(made.info, 'Database alice_wp created');
    const { created, ...rest } = made.data as Record<string, unknown>;
    assert.deepEqual(rest, { name: 'alice_wp', users: [] });
    assert.ok(!Number.isNaN(Date.parse(created as string)));
    const again = await refused(call('alice', 'add_database', { name: 'alice_wp' }));
    assert.deepEqual([again.code, again.param], ['object_exists', 'name']);
  });

  it("a name inside another account's prefix gets the caller's own prefix, never the other's", async () => {
    const made = await call('bob', 'add_database', { name: 'alice_x' });
    assert.equal((made.data as { name: string }).name, 'bob_alice_x');
    assert.deepEqual(
      (await databasesOf(h.services.store.db, 'alice')).map((d) => d.name),
      ['alice_wp'],
    );
    // bob cannot remove, grant or even name alice's database: it is bob_alice_wp to him.
    const gone = await refused(call('bob', 'remove_database', { name: 'alice_wp' }));
    assert.equal(gone.code, 'object_not_found');
    assert.match(gone.info, /bob_alice_wp/);
  });

  it('suffixes are 1 to 16 of a-z, 0-9 and _; MariaDB’s own names are refused', async () => {
    assert.equal((await refused(call('alice', 'add_database', { name: '' }))).code, 'missing_parameter');
    for (const name of ['WP', 'a-b', 'a.b', 'a%', 'a b', 'x'.repeat(17), 'alice_', "a'b", 'a`b']) {
      const answer = await refused(call('alice', 'add_database', { name }));
      assert.deepEqual([answer.code, answer.param], ['invalid_parameter', 'name'], name);
    }
    await createAccount(h, 'information', { domain: 'information.example' });
    const own = await refused(call('information', 'add_database', { name: 'schema' }));
    assert.match(own.info, /MariaDB's own/);
    assert.equal((await databasesOf(h.services.store.db, 'information')).length, 0);
  });

  it('the sql limit counts databases, not users, 400 limit_reached, and account_info shows it', async () => {
    await call('alice', 'add_database', { name: 'shop' });
    const answer = await refused(call('alice', 'add_database', { name: 'third' }));
    assert.equal(answer.code, 'limit_reached');
    assert.match(answer.info, /sql limit \(2\)/);
    for (const name of ['u1', 'u2', 'u3'])
      await call('alice', 'add_database_user', { name, password: SECRET });
    const info = (await call('alice', 'account_info')).data as {
      limits: { sql: { used: number; limit: string } };
    };
    assert.deepEqual(info.limits.sql, { used: 2, limit: '2' });
  });

  it('concurrent adds never pass the limit', async () => {
    await createAccount(h, 'carol', { domain: 'carol.example', sql: '3' });
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => call('carol', 'add_database', { name: `db${i}` })),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 3);
    for (const r of results)
      if (r.status === 'rejected') assert.equal((r.reason as ApiError).code, 'limit_reached');
    assert.equal((await databasesOf(h.services.store.db, 'carol')).length, 3);
  });

  it('the configuration bounds database users per account, also for adds at the same moment', async () => {
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        call('carol', 'add_database_user', { name: `user${i}`, password: SECRET }),
      ),
    );
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 5);
    const refusedOne = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    assert.equal((refusedOne.reason as ApiError).code, 'limit_reached');
    assert.match((refusedOne.reason as ApiError).message, /database_users limit \(5\)/);
    assert.equal((await databaseUsersOf(h.services.store.db, 'carol')).length, 5);
  });

  it("a user keeps MariaDB's hash of its password alone; grants and revokes stay in the account", async () => {
    const made = await call('alice', 'add_database_user', { name: 'alice_wp', password: SECRET });
    assert.deepEqual((made.data as { name: string; databases: string[] }).databases, []);
    const stored = (await databaseUsersOf(h.services.store.db, 'alice')).find((u) => u.name === 'alice_wp')!;
    assert.equal(stored.passwordHash, nativeHash(SECRET));
    const granted = await call('alice', 'grant_database', { database: 'wp', dbuser: 'wp' });
    assert.deepEqual((granted.data as { databases: string[] }).databases, ['alice_wp']);
    // Twice changes nothing.
    await call('alice', 'grant_database', { database: 'alice_wp', dbuser: 'alice_wp' });
    const listed = (await call('alice', 'list_databases')).data as {
      databases: { name: string; users: string[] }[];
      users: { name: string; databases: string[] }[];
    };
    assert.deepEqual(listed.databases.find((d) => d.name === 'alice_wp')!.users, ['alice_wp']);
    assert.ok(!JSON.stringify(listed).includes(stored.passwordHash));
    // bob's users cannot be granted alice's database: to bob it is bob_alice_wp, which he lacks.
    await call('bob', 'add_database_user', { name: 'wp', password: SECRET });
    const cross = await refused(call('bob', 'grant_database', { database: 'alice_wp', dbuser: 'bob_wp' }));
    assert.deepEqual([cross.code, cross.param], ['object_not_found', 'database']);
    const revoked = await call('alice', 'revoke_database', { database: 'wp', dbuser: 'wp' });
    assert.deepEqual((revoked.data as { databases: string[] }).databases, []);
  });

  it('change_database_password changes the hash; remove_database takes its grants with it', async () => {
    await call('alice', 'change_database_password', { name: 'wp', password: 'Another-Secret-8' });
    const find = async () =>
      (await databaseUsersOf(h.services.store.db, 'alice')).find((u) => u.name === 'alice_wp')!;
    assert.equal((await find()).passwordHash, nativeHash('Another-Secret-8'));
    await call('alice', 'grant_database', { database: 'shop', dbuser: 'wp' });
    await call('alice', 'remove_database', { name: 'shop' });
    assert.deepEqual((await find()).grants, []);
    await call('alice', 'remove_database_user', { name: 'wp' });
    assert.equal(
      await refused(call('alice', 'remove_database_user', { name: 'wp' })).then((a) => a.code),
      'object_not_found',
    );
  });

  it('no password is audited or sent in an event', async () => {
    const { db } = h.services.store;
    const audit = JSON.stringify(await db.selectFrom('audit_log').selectAll().execute());
    const events = await db.selectFrom('events').select(['type', 'payload']).execute();
    for (const text of [audit, JSON.stringify(events)]) {
      assert.ok(!text.includes(SECRET));
      assert.ok(!text.includes(nativeHash(SECRET)));
    }
    const added = events.find((e) => e.type === 'database_user.added');
    assert.ok(added);
    assert.deepEqual(Object.keys(JSON.parse(added.payload).data), ['name']);
  });
});
