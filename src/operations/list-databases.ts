// list_databases (CONTRACT §14): the holder's MariaDB databases, each with the users granted it,
// and its database users, each with the databases it is granted; by name. Never a password.

import { objectsOf } from '../store/objects.ts';
import { holderAccount } from './common.ts';
import { databaseObject, databaseUserObject } from './database-objects.ts';
import { defineOperation } from './operation.ts';
import { results } from './results.ts';

export const listDatabases = defineOperation({
  name: 'list_databases',
  summary: "The account's MariaDB databases and database users.",
  changesState: false,
  audiences: ['holder'],
  params: {},
  example: {},
  result: results.databases,
  errors: [],
  async run(ctx) {
    const account = await holderAccount(ctx.db, ctx.principal);
    const objects = await objectsOf(ctx.db, account.user);
    return {
      data: {
        databases: objects.databases.map((d) => databaseObject(d, objects)),
        users: objects.database_users.map(databaseUserObject),
      },
      info: `${objects.databases.length} database(s) and ${objects.database_users.length} database user(s) of ${account.user}`,
    };
  },
});
