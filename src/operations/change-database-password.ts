// change_database_password (CONTRACT §14): a database user's own password; MariaDB takes its hash
// at once, and connections already open stay until they end.
import { mariadbPasswordHash } from '../core/databases.ts';
import { updateDatabaseUser } from '../store/databases.ts';
import { changeObjects } from './common.ts';
import { databaseUserObject, findDatabaseUser } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const changeDatabasePassword = defineOperation({
  name: 'change_database_password',
  summary: "Change a MariaDB user's password.",
  changesState: true,
  audiences: ['holder'],
  event: 'database_user.password_changed',
  params: {
    name: required(kinds.databaseName, "The database user's name, with or without the prefix `<user>_`"),
    password: required(kinds.password, 'Its new password'),
  },
  example: { name: 'wp', password: 'N3w-Str0ng-Secret' },
  result: results.databaseUser,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const passwordHash = mariadbPasswordHash(input.password);
    const changed = await changeObjects(ctx, async (db, account, before) => {
      const found = findDatabaseUser(account, before, 'name', input.name);
      await updateDatabaseUser(db, account.user, found.name, { passwordHash });
      return found;
    });
    return { data: databaseUserObject(changed), info: `Password of database user ${changed.name} changed` };
  },
});
