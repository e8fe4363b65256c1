// remove_database_user (CONTRACT §14): the MariaDB user goes, with its grants; its open connections
// are ended. The databases stay.
import { deleteDatabaseUser } from '../store/databases.ts';
import { changeObjects } from './common.ts';
import { databaseUserObject, findDatabaseUser } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeDatabaseUser = defineOperation({
  name: 'remove_database_user',
  summary: 'Remove a MariaDB user of the account.',
  changesState: true,
  audiences: ['holder'],
  event: 'database_user.removed',
  params: {
    name: required(kinds.databaseName, "The database user's name, with or without the prefix `<user>_`"),
  },
  example: { name: 'wp' },
  result: results.databaseUser,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = findDatabaseUser(account, before, 'name', input.name);
      await deleteDatabaseUser(db, account.user, found.name);
      return found;
    });
    return { data: databaseUserObject(removed), info: `Database user ${removed.name} removed` };
  },
});
