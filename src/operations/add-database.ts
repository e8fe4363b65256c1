// add_database (CONTRACT §14): a MariaDB database `<user>_<suffix>` (the prefix is added when it
// is missing: `alice_x` asked for by bob is bob's `bob_alice_x`). The account's `sql` limit counts
// its databases and is taken inside the transaction that adds one (the account's row is locked).
import { prefixedName } from '../core/databases.ts';
import { apiError } from '../core/errors.ts';
import { insertDatabase, type SqlDatabase } from '../store/databases.ts';
import { uniqueViolation } from '../store/errors.ts';
import { changeObjects } from './common.ts';
import { databaseObject, refuseOverSqlLimit } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

export const addDatabase = defineOperation({
  name: 'add_database',
  summary: 'Create a MariaDB database named `<user>_<suffix>`.',
  changesState: true,
  audiences: ['holder'],
  event: 'database.added',
  params: {
    name: required(kinds.databaseName, 'Its name: the suffix alone, or with the prefix `<user>_`'),
  },
  example: { name: 'wp' },
  result: results.database,
  errors: ['limit_reached', 'object_exists'],
  async run(ctx, input) {
    const added = await changeObjects(ctx, async (db, account, before) => {
      const name = prefixedName('name', account.user, input.name);
      if (before.databases.some((d) => d.name === name))
        throw apiError('object_exists', { kind: 'database', name }, 'name');
      refuseOverSqlLimit(account, before);
      const made: SqlDatabase = { name, createdAt: ctx.services.now() };
      try {
        await insertDatabase(db, account.user, made);
      } catch (error) {
        if (uniqueViolation(error) === 'name')
          throw apiError('object_exists', { kind: 'database', name }, 'name');
        throw error;
      }
      return { made, before };
    });
    return { data: databaseObject(added.made, added.before), info: `Database ${added.made.name} created` };
  },
});
