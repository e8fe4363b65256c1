// add_database_user (CONTRACT §14): a MariaDB user `<user>_<suffix>`@localhost with its own
// password, granted nothing until grant_database. The store keeps MariaDB's hash of the password
// alone, and MariaDB is given that hash, never the password. Database users do not count against
// the `sql` limit; the configuration's `database_users` (default 10) bounds them, so that with
// `database_user_connections` no account can hold all of MariaDB's connections.
import { mariadbPasswordHash, prefixedName } from '../core/databases.ts';
import { apiError } from '../core/errors.ts';
import { type DatabaseUser, insertDatabaseUser } from '../store/databases.ts';
import { uniqueViolation } from '../store/errors.ts';
import { changeObjects } from './common.ts';
import { databaseUserObject } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const addDatabaseUser = defineOperation({
  name: 'add_database_user',
  summary: 'Create a MariaDB user `<user>_<suffix>` at localhost, with its own password.',
  changesState: true,
  audiences: ['holder'],
  event: 'database_user.added',
  params: {
    name: required(kinds.databaseName, 'Its name: the suffix alone, or with the prefix `<user>_`'),
    password: required(kinds.password, 'Its password'),
  },
  example: { name: 'wp', password: 'Str0ng-Secret' },
  result: results.databaseUser,
  errors: ['limit_reached', 'object_exists'],
  async run(ctx, input) {
    const passwordHash = mariadbPasswordHash(input.password);
    const added = await changeObjects(ctx, async (db, account, before) => {
      const name = prefixedName('name', account.user, input.name);
      if (before.database_users.some((u) => u.name === name))
        throw apiError('object_exists', { kind: 'database user', name }, 'name');
      const limit = ctx.services.config.databaseUsers;
      if (before.database_users.length >= limit)
        throw apiError('limit_reached', { limit: 'database_users', value: String(limit) });
      const made: DatabaseUser = { name, passwordHash, grants: [], createdAt: ctx.services.now() };
      try {
        await insertDatabaseUser(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'name')
          throw apiError('object_exists', { kind: 'database user', name }, 'name');
        throw error;
      }
      return made;
    });
    return { data: databaseUserObject(added), info: `Database user ${added.name} created` };
  },
});
