// The databases in an account's backups (CONTRACT §15). Each database of the account is dumped by
// mariadb-dump (root, over the socket; one transaction, so a consistent dump while the site keeps
// writing; routines, triggers and events included) into a file of root's, <name>.sql, in the
// directory of root's the backup component gives (<data-dir>/backup-staging/<user>/databases, 0700),
// which restic stores in the same snapshot as the home and the account's record; the files go
// once the snapshot is taken. The database users, their password hashes and grants are in the
// record (account.json), from which a removed account is made again.
//
// A restore puts back exactly the snapshot's content of a database: it is dropped, made again empty
// and loaded from the dump (a table dropped since comes back, rows added since go). Only databases
// the account has now are restored; every name is checked (the account's prefix, MariaDB's strict
// pattern) before anything changes, and none reaches a shell. The dumps are taken and loaded through
// MariaDB, wherever the database's files are: a restore larger than the account's quota stops there.
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { StepRefused } from '../../driver.ts';
import type { BackupPart } from '../backup/component.ts';
import type { LinuxContext } from '../context.ts';
import { createStatements, dumpDatabaseToFile, identifier, loadDumpFile, runSql } from './sql.ts';
import { databaseStorage } from './storage.ts';

const NAME = /^[a-z0-9_]{1,64}$/;
const SUFFIX = '.sql';

export function databaseBackupPart(ctx: LinuxContext): BackupPart {
  const available = () => existsSync(ctx.path(ctx.linux.mariadbSocket));
  const storage = databaseStorage(ctx);

  /** The dumps a snapshot's directory holds, by database name. */
  const dumped = (dir: string): string[] => {
    try {
      return readdirSync(dir)
        .filter((file) => file.endsWith(SUFFIX) && lstatSync(join(dir, file)).isFile())
        .map((file) => file.slice(0, -SUFFIX.length));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  };

  return {
    name: 'databases',

    async collect(account, objects, dir) {
      if (objects.databases.length === 0) return;
      if (!available())
        throw new Error(
          `MariaDB does not answer at ${ctx.linux.mariadbSocket}: the databases of ${account.user} cannot be dumped`,
        );
      for (const { name } of objects.databases)
        await dumpDatabaseToFile(ctx, name, join(dir, `${name}${SUFFIX}`));
    },

    check(account, objects, dir, name) {
      const inSnapshot = dumped(dir);
      const names = name === undefined ? inSnapshot.sort() : [name];
      // The request's parameter: `database` when it names one, else `what` (every database).
      const param = name === undefined ? 'what' : 'database';
      for (const each of names) {
        if (!NAME.test(each) || !each.startsWith(`${account.user}_`))
          throw new StepRefused(param, `${each} is not a database of ${account.user}`);
        if (!objects.databases.some((d) => d.name === each))
          throw new StepRefused(
            param,
            `the account has no database ${each} now: add it again (within the sql limit), then restore it`,
          );
        if (!inSnapshot.includes(each))
          throw new StepRefused(param, `the snapshot holds no database ${each}`);
      }
      return names;
    },

    async restore(account, objects, dir, name) {
      const names = this.check(account, objects, dir, name);
      if (names.length > 0 && !available())
        throw new Error(`MariaDB does not answer at ${ctx.linux.mariadbSocket}`);
      for (const each of names) {
        // Made again where its account's quota counts it (storage.ts), as add_database makes it.
        await runSql(ctx, [`DROP DATABASE IF EXISTS ${identifier(each)}`]);
        await storage.clear(account, [each]);
        await storage.place(account, [each]);
        await runSql(ctx, createStatements(each));
        await loadDumpFile(ctx, each, join(dir, `${each}${SUFFIX}`));
      }
    },
  };
}
