// `berth <command>`: the server and the administrator's shell tools. Every command takes
// --data-dir and works while a server runs on the same data directory. Each command is a file of
// commands/ (copy a sibling), listed once in `commands` below; --help is made from what it declares.

import { parseArgs } from 'node:util';
import { BERTH_VERSION } from '../operations/version.ts';
import {
  COMMON_OPTIONS,
  type Command,
  type Flags,
  type Io,
  type Options,
  parseArgsOptions,
  UsageError,
} from './command.ts';
import { adminCommand } from './commands/admin.ts';
import { apiUserCommand } from './commands/api-user.ts';
import { auditCommand } from './commands/audit.ts';
import { backupCommand } from './commands/backup.ts';
import { certsCommand } from './commands/certs.ts';
import { doctorCommand } from './commands/doctor.ts';
import { eventsCommand } from './commands/events.ts';
import { initCommand } from './commands/init.ts';
import { migrateStoreCommand } from './commands/migrate-store.ts';
import { moveAccountCommand } from './commands/move-account.ts';
import { nodesCommand } from './commands/nodes.ts';
import { packageCommand } from './commands/package.ts';
import { sandboxCommand } from './commands/sandbox.ts';
import { sandboxInsideCommand } from './commands/sandbox-inside.ts';
import { serveCommand } from './commands/serve.ts';
import { usageCommand } from './commands/usage.ts';
import { SERVER_OPTIONS } from './configuration.ts';
import { commandHelp, commandUsage, overview } from './help.ts';
import { readStdin } from './input.ts';

export { UsageError } from './command.ts';

/** Every command, in the order `berth --help` lists them. */
export const commands: readonly Command[] = [
  initCommand,
  serveCommand,
  sandboxCommand,
  doctorCommand,
  certsCommand,
  usageCommand,
  backupCommand,
  apiUserCommand,
  packageCommand,
  adminCommand,
  auditCommand,
  eventsCommand,
  nodesCommand,
  moveAccountCommand,
  migrateStoreCommand,
  sandboxInsideCommand,
];

const TOP_OPTIONS = {
  ...COMMON_OPTIONS,
  version: { type: 'boolean', help: "prints Berth's version" },
} as const satisfies Options;

/** Every option any command takes: enough to find the command's name among the words. */
const ANY_OPTION = parseArgsOptions(
  Object.assign({}, TOP_OPTIONS, SERVER_OPTIONS, ...commands.map((command) => command.options)),
);

type Parsed = { positionals: string[]; flags: Flags };

function parse(argv: string[], options: Options): Parsed {
  const { positionals, values } = parseArgs({
    args: argv,
    options: parseArgsOptions(options),
    allowPositionals: true,
    strict: true,
  });
  return { positionals, flags: values as Flags };
}

/** parseArgs' complaint, shorter: its unknown option is the usual one. */
function parseError(error: unknown, command?: Command): string {
  const message = (error as Error).message;
  const unknown = /^Unknown option '([^']+)'/.exec(message)?.[1];
  if (unknown === undefined) return message.split('\n')[0]!;
  return command ? `${command.name} has no option ${unknown}` : `unknown option ${unknown}`;
}

/** A mistake in the command line: its reason, then the usage that would have been right. */
function usageError(message: string, usage: string): number {
  process.stderr.write(`berth: ${message}\n${usage}`);
  return 2;
}

/** Runs one command line; returns the exit status. */
export async function main(
  argv: string[],
  io: Io = { stdin: readStdin, out: (t) => process.stdout.write(t) },
) {
  const name = parseArgs({ args: argv, options: ANY_OPTION, allowPositionals: true, strict: false })
    .positionals[0];
  const command = commands.find((c) => c.name === name);
  if (command === undefined) return topLevel(argv, io);
  const options = {
    ...COMMON_OPTIONS,
    ...(command.configured && SERVER_OPTIONS),
    ...command.options,
  } as Options;
  let parsed: Parsed;
  try {
    parsed = parse(argv, options);
  } catch (error) {
    return usageError(parseError(error, command), commandUsage(command));
  }
  if (parsed.flags.help) {
    io.out(commandHelp(command));
    return 0;
  }
  try {
    return await command.run(parsed.positionals.slice(1), parsed.flags, io);
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message, commandUsage(command));
    process.stderr.write(`berth: ${(error as Error).message.replace(/\s+/g, ' ')}\n`);
    return 1;
  }
}

/** `berth`, `berth --help`, `berth help [COMMAND]`, `berth --version`, or an unknown command. */
function topLevel(argv: string[], io: Io): number {
  let parsed: Parsed;
  try {
    parsed = parse(argv, TOP_OPTIONS);
  } catch (error) {
    return usageError(parseError(error), overview(commands));
  }
  const [name, topic] = parsed.positionals;
  if (parsed.flags.version || name === 'version') {
    io.out(`berth ${BERTH_VERSION}\n`);
    return 0;
  }
  if (name === 'help' && topic !== undefined) {
    const command = commands.find((c) => c.name === topic);
    if (command === undefined) return usageError(`unknown command ${topic}`, overview(commands));
    io.out(commandHelp(command));
    return 0;
  }
  if (name === undefined || name === 'help') {
    io.out(overview(commands));
    // A bare `berth` did not do what was asked of it.
    return name === undefined && !parsed.flags.help ? 2 : 0;
  }
  return usageError(`unknown command ${name}`, overview(commands));
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
