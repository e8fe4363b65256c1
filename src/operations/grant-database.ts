// grant_database and revoke_database (CONTRACT §14): a database user of the account gets every
// privilege on one of the account's databases (and on nothing else), or loses them. Granting twice
// or revoking what was not granted changes nothing.
import { updateDatabaseUser } from '../store/databases.ts';
import { changeObjects } from './common.ts';
import { databaseUserObject, findDatabase, findDatabaseUser } from './database-objects.ts';
import { defineOperation, kinds, required } from './operation.ts';
import { results } from './results.ts';

const params = {
  database: required(kinds.databaseName, "The database's name, with or without the prefix `<user>_`"),
  dbuser: required(kinds.databaseName, "The database user's name, with or without the prefix `<user>_`"),
};

export const grantDatabase = defineOperation({
  name: 'grant_database',
  summary: 'Give a database user of the account all privileges on one of its databases.',
  changesState: true,
  audiences: ['holder'],
  event: 'database.granted',
  params,
  example: { database: 'wp', dbuser: 'wp' },
  result: results.databaseUser,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const granted = await changeObjects(ctx, async (db, account, before) => {
      const database = findDatabase(account, before, 'database', input.database);
      const dbUser = findDatabaseUser(account, before, 'dbuser', input.dbuser);
      const grants = [...new Set([...dbUser.grants, database.name])].sort();
      await updateDatabaseUser(db, account.user, dbUser.name, { grants });
      return { ...dbUser, grants };
    });
    return {
      data: databaseUserObject(granted),
      info: `Database user ${granted.name} granted ${granted.grants.join(', ')}`,
    };
  },
});

export const revokeDatabase = defineOperation({
  name: 'revoke_database',
  summary: 'Take from a database user of the account its privileges on one of its databases.',
  changesState: true,
  audiences: ['holder'],
  event: 'database.revoked',
  params,
  example: { database: 'wp', dbuser: 'wp' },
  result: results.databaseUser,
  errors: ['object_not_found'],
  async run(ctx, input) {
    const revoked = await changeObjects(ctx, async (db, account, before) => {
      const database = findDatabase(account, before, 'database', input.database);
      const dbUser = findDatabaseUser(account, before, 'dbuser', input.dbuser);
      const grants = dbUser.grants.filter((name) => name !== database.name);
      await updateDatabaseUser(db, account.user, dbUser.name, { grants });
      return { ...dbUser, grants };
    });
    return { data: databaseUserObject(revoked), info: `Database user ${revoked.name} revoked a database` };
  },
});
