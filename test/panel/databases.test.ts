// The panel's Databases page (CONTRACT §14): the `Database name` field and the `Create database`
// button, a user added with its password (never written back), a grant and a revoke, the sql limit
// explained beside Database name, another account's database out of reach, removal, and every
// refusal in the words of its labels.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { mariadbPasswordHash } from '../../src/core/databases.ts';
import { databasesOf, databaseUsersOf } from '../../src/store/databases.ts';
import { get, type HolderSession, type PanelHarness, panelSuite } from './pages.ts';

describe('the panel’s Databases page', () => {
  const suite = panelSuite({ alice: { sql: '1' }, bob: {} });
  let h: PanelHarness;
  let alice: HolderSession;
  let bob: HolderSession;
  const post = (who: HolderSession, url: string, fields: Record<string, string>) =>
    suite.post(url, fields, who);
  before(() => {
    ({ h } = suite);
    ({ alice, bob } = suite.holders);
  });

  it('is in the navigation, with its labels, and says there is nothing yet', async () => {
    const page = await get(h, '/databases', alice.cookie);
    assert.equal(page.status, 200);
    assert.match(page.body, /<a href="\/databases"[^>]*>Databases<\/a>/);
    assert.match(page.body, /<label for="name">Database name<\/label>/);
    assert.match(page.body, /<button type="submit">Create database<\/button>/);
    assert.match(page.body, /<label for="dbuser">User name<\/label>/);
    assert.match(page.body, /<label for="dbuser-password">Password<\/label>/);
    assert.match(page.body, /No databases yet\./);
    assert.match(page.body, /Databases: 0 of 1 in use\./);
    assert.match(page.body, /alice_ is put in front/);
  });

  it('creates a database and a user, grants and revokes, as the holder', async () => {
    assert.equal((await post(alice, '/databases', { name: 'wp' })).status, 303);
    const user = await post(alice, '/databases/users', { dbuser: 'wp', password: 'Db-user-pass-1' });
    assert.equal(user.status, 303);
    assert.equal(
      (await post(alice, '/databases/grant', { grantee: 'alice_wp', database: 'alice_wp' })).status,
      303,
    );
    assert.deepEqual((await databaseUsersOf(h.services.store.db, 'alice'))[0]!.grants, ['alice_wp']);
    const page = await get(h, '/databases', alice.cookie);
    assert.match(
      page.body,
      /<td data-label="Database"><code>alice_wp<\/code><\/td>\s*<td data-label="Users">alice_wp<\/td>/,
    );
    assert.match(page.body, /<option value="alice_wp">alice_wp<\/option>/);
    assert.doesNotMatch(page.body, /Db-user-pass-1/);
    const changed = await post(alice, '/databases/users/password', {
      holder: 'alice_wp',
      password: 'Db-user-pass-9',
    });
    assert.equal(changed.status, 303);
    const { passwordHash } = (await databaseUsersOf(h.services.store.db, 'alice'))[0]!;
    assert.equal(passwordHash, mariadbPasswordHash('Db-user-pass-9'));
    const short = await post(alice, '/databases/users/password', { holder: 'alice_wp', password: 'short' });
    assert.equal(short.status, 400);
    assert.match(short.body, /id="new-dbuser-password-error">New password: /);
    assert.equal(
      (await post(alice, '/databases/revoke', { grantee: 'alice_wp', database: 'alice_wp' })).status,
      303,
    );
    assert.deepEqual((await databaseUsersOf(h.services.store.db, 'alice'))[0]!.grants, []);
  });

  it('explains the used-up sql limit beside Database name, keeping what was typed', async () => {
    const page = await post(alice, '/databases', { name: 'shop' });
    assert.equal(page.status, 400);
    assert.match(
      page.body,
      /<input id="name" name="name" aria-describedby="name-hint name-error" aria-invalid="true"[^>]*value="shop"/,
    );
    assert.match(page.body, /id="name-error">Your plan allows 1 databases and all are in use\./);
  });

  it('shows a refused user in its labels’ words and never writes the password back', async () => {
    const page = await post(alice, '/databases/users', { dbuser: 'Bad-Name', password: 'Db-user-pass-2' });
    assert.equal(page.status, 400);
    assert.match(page.body, /id="dbuser-error">User name: /);
    assert.doesNotMatch(page.body, /Db-user-pass-2/);
    const short = await post(alice, '/databases/users', { dbuser: 'other', password: 'short' });
    assert.match(short.body, /id="dbuser-password-error">Password: /);
  });

  it("bob cannot remove alice's database from his page: alice_wp is bob_alice_wp to him, which he lacks", async () => {
    const removed = await post(bob, '/databases/remove', { name: 'alice_wp' });
    assert.equal(removed.status, 400);
    assert.match(removed.body, /Database name: this does not exist\./);
    assert.deepEqual(
      (await databasesOf(h.services.store.db, 'alice')).map((d) => d.name),
      ['alice_wp'],
    );
  });

  it('removes a user and a database', async () => {
    assert.equal((await post(alice, '/databases/users/remove', { name: 'alice_wp' })).status, 303);
    assert.equal((await post(alice, '/databases/remove', { name: 'alice_wp' })).status, 303);
    const page = await get(h, '/databases', alice.cookie);
    assert.match(page.body, /No databases yet\./);
    assert.match(page.body, /No database users yet\./);
  });

  it('explains the number of users the server allows beside User name', async () => {
    // database_users: 5 by default.
    for (let i = 0; i < 5; i++)
      assert.equal(
        (await post(alice, '/databases/users', { dbuser: `u${i}`, password: 'Db-user-pass-1' })).status,
        303,
      );
    const page = await post(alice, '/databases/users', { dbuser: 'u5', password: 'Db-user-pass-1' });
    assert.equal(page.status, 400);
    assert.match(
      page.body,
      /id="dbuser-error">All the database users this server allows an account are in use\./,
    );
    assert.match(page.body, /id="dbuser" name="dbuser"[^>]*value="u5"/);
  });
});
