// Identities that outlive names, and a sliding lock-out window.
// - accounts.reseller_id: a fresh id each time an account becomes a reseller. An API account
//   bound to a reseller is bound to that id, so a removed (or demoted) reseller's binding refuses
//   every call, even when a new account takes the same name.
// - api_users.id: the API account itself. Idempotency keys belong to it, so a deleted and
//   re-created API account of the same name starts with no stored answers.
// - auth_failure_times and auth_locks replace auth_failures' fixed windows: a failure is a row,
//   and the lock-out counts the rows of the last window, whenever it ends.
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('reseller_id', 'text').execute();
  for (const { user } of await db.selectFrom('accounts').select('user').where('reseller', '=', 1).execute()) {
    await db.updateTable('accounts').set({ reseller_id: randomUUID() }).where('user', '=', user).execute();
  }

  await db.schema.alterTable('api_users').addColumn('id', 'text').execute();
  await db.schema.alterTable('api_users').addColumn('reseller_id', 'text').execute();
  const apiUsers = await db.selectFrom('api_users').select(['name', 'reseller']).execute();
  for (const { name, reseller } of apiUsers) {
    const bound =
      reseller === null
        ? undefined
        : await db
            .selectFrom('accounts')
            .select('reseller_id')
            .where('user', '=', reseller)
            .executeTakeFirst();
    await db
      .updateTable('api_users')
      .set({ id: randomUUID(), reseller_id: bound?.reseller_id ?? null })
      .where('name', '=', name)
      .execute();
  }
  await db.schema.createIndex('api_users_id').on('api_users').column('id').unique().execute();

  // Stored answers move from the API account's name to its id.
  const keys = await db.selectFrom('idempotency_keys').select(['api_user', 'key']).execute();
  for (const { api_user, key } of keys) {
    const owner = await db
      .selectFrom('api_users')
      .select('id')
      .where('name', '=', api_user)
      .executeTakeFirst();
    const row = db.updateTable('idempotency_keys').where('api_user', '=', api_user).where('key', '=', key);
    if (owner) await row.set({ api_user: owner.id }).execute();
    else
      await db
        .deleteFrom('idempotency_keys')
        .where('api_user', '=', api_user)
        .where('key', '=', key)
        .execute();
  }

  await db.schema.dropTable('auth_failures').execute();
  await db.schema
    .createTable('auth_failure_times')
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('at_ms', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('auth_failure_times_address')
    .on('auth_failure_times')
    .columns(['address', 'at_ms'])
    .execute();
  await db.schema
    .createTable('auth_locks')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('locked_until_ms', 'bigint', (c) => c.notNull())
    .execute();
}
