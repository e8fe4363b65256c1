// How Berth talks to MariaDB: as root over its unix socket (the unix_socket plugin: no password
// anywhere), with the SQL on the client's standard input, never on its command line. Every name
// is checked against the strict pattern of CONTRACT §14 and then quoted; a password reaches
// MariaDB as its hash alone.

import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { LinuxContext } from '../context.ts';
import { newPrivateFileStream } from '../files.ts';
import { streamCommand } from '../run.ts';

export const MARIADB = '/usr/bin/mariadb';
export const MARIADB_DUMP = '/usr/bin/mariadb-dump';

const NAME = /^[a-z0-9_]{1,64}$/;
const HASH = /^\*[0-9A-F]{40}$/;

function checked(name: string): string {
  if (!NAME.test(name)) throw new Error(`refusing an unsafe MariaDB name ${JSON.stringify(name)}`);
  return name;
}

/** A database or table name as an identifier: `name`. */
export const identifier = (name: string) => `\`${checked(name).replaceAll('`', '``')}\``;

/**
 * A database as a GRANT names it: `_` and `%` are wildcards there, so each is escaped, and
 * `alice\_wp` covers alice_wp alone (never alice1wp, never a neighbour's alice_wpx).
 */
export const grantedDatabase = (name: string) => `\`${checked(name).replace(/[_%]/g, (c) => `\\${c}`)}\``;

/**
 * A new database: made if missing, then given its character set (ALTER: where the database's
 * directory was made first, in the account's quota, CREATE … IF NOT EXISTS finds it and sets none).
 */
export const createStatements = (name: string) => [
  `CREATE DATABASE IF NOT EXISTS ${identifier(name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
  `ALTER DATABASE ${identifier(name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
];

/** A user at localhost, the only host an account's users have. */
export const localUser = (name: string) => `'${checked(name)}'@'localhost'`;

/** A string literal: a name or a hash, both checked, never free text. */
export function literal(value: string): string {
  if (!NAME.test(value) && !HASH.test(value)) throw new Error('refusing an unsafe MariaDB literal');
  return `'${value}'`;
}

/** The client's arguments: root, over the socket, nothing read from the host's option files. */
export function clientArgs(ctx: LinuxContext, program = MARIADB): string[] {
  return [
    program,
    '--no-defaults',
    '--protocol=socket',
    `--socket=${ctx.path(ctx.linux.mariadbSocket)}`,
    '--user=root',
  ];
}

/** Runs statements as root; answers the rows, tab-separated, without column names. */
export async function runSql(
  ctx: LinuxContext,
  statements: readonly string[],
  database?: string,
): Promise<string[][]> {
  if (statements.length === 0) return [];
  const argv = [
    ...clientArgs(ctx),
    '--batch',
    '--skip-column-names',
    ...(database ? [checked(database)] : []),
  ];
  const { stdout } = await ctx.runner.run(argv, { input: `${statements.join(';\n')};\n` });
  return stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\t'));
}

/** Loads a dump into a database, the dump on standard input. */
export async function loadDump(ctx: LinuxContext, database: string, dump: string): Promise<void> {
  await ctx.runner.run([...clientArgs(ctx), '--batch', checked(database)], {
    input: dump,
    timeoutMs: 30 * 60_000,
  });
}

/** mariadb-dump's arguments for a consistent dump of one database, with its routines and triggers. */
const dumpArgs = (ctx: LinuxContext, database: string) => [
  ...clientArgs(ctx, MARIADB_DUMP),
  '--single-transaction',
  '--routines',
  '--triggers',
  '--events',
  '--hex-blob',
  '--',
  checked(database),
];

/**
 * A consistent dump of a database (one transaction: InnoDB tables as they were at its start, while
 * the site keeps writing), with its routines and triggers, as text.
 */
export async function dumpDatabase(ctx: LinuxContext, database: string): Promise<string> {
  const dump = streamCommand(dumpArgs(ctx, database));
  const chunks: Buffer[] = [];
  dump.output.on('data', (chunk: Buffer) => chunks.push(chunk));
  await dump.done;
  return Buffer.concat(chunks).toString('utf8');
}

/** The same dump, streamed into a new file of root's alone (0600), never held in memory. */
export async function dumpDatabaseToFile(ctx: LinuxContext, database: string, file: string): Promise<void> {
  const dump = streamCommand(dumpArgs(ctx, database));
  await Promise.all([pipeline(dump.output, newPrivateFileStream(file)), dump.done]);
}

/** Loads a dump file into a database, streamed to the client's standard input. */
export async function loadDumpFile(ctx: LinuxContext, database: string, file: string): Promise<void> {
  const load = streamCommand([...clientArgs(ctx), '--batch', checked(database)], createReadStream(file));
  load.output.resume();
  await load.done;
}
