// remove_database (CONTRACT §14): the database goes with its tables and data, and with its grant to
// every user of the account; the users stay.
import { deleteDatabase } from '../store/databases.ts';
import { changeObjects } from './common.ts';
import { databaseObject, findDatabase } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const removeDatabase = defineOperation({
  name: 'remove_database',
  summary: 'Remove a MariaDB database of the account, with all its data.',
  changesState: true,
  audiences: ['holder'],
  event: 'database.removed',
  params: {
    name: required(kinds.databaseName, 'Its name, with or without the prefix `<user>_`'),
  },
  example: { name: 'wp' },
  result: results.database,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const removed = await changeObjects(ctx, async (db, account, before) => {
      const found = findDatabase(account, before, 'name', input.name);
      await deleteDatabase(db, account.user, found.name);
      return databaseObject(found, before);
    });
    return { data: removed, info: `Database ${removed.name} removed` };
  },
});
