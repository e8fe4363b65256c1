// `berth <command>`: the server and the administrator's shell tools. Every command takes
// --data-dir and works while a server runs on the same data directory. Each command is a file of
// commands/; a new one is added to `commands` below.

import { parseArgs } from 'node:util';
import {
  COMMON_OPTIONS,
  type Command,
  type Flags,
  type Io,
  parseArgsOptions,
  UsageError,
} from './command.ts';
import { adminCommand } from './commands/admin.ts';
import { apiUserCommand } from './commands/api-user.ts';
import { auditCommand } from './commands/audit.ts';
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

const USAGE = `usage: berth <command> [--data-dir DIR] [--database postgres://…]

  init
  serve [--host H] [--port P] [--reseller-port Q] [--no-tls] [--driver record|linux]
        [--system-root DIR] [--demo] [--node NAME] [--advertise URL]
  sandbox [--node NAME --database postgres://…]
                                   a throwaway hosting server on this machine (needs root);
                                   sandboxes on one PostgreSQL store make a fleet
  sandbox exec -- CMD [ARG]...     runs a command inside the running sandbox
  doctor [--system-root DIR]
  certs [--json] [--system-root DIR]
  usage refresh [--system-root DIR]
  api-user create NAME --password-stdin [--allow-ip IP_OR_CIDR]... [--reseller R]
  api-user list [--json]
  api-user reset-password NAME --password-stdin
  api-user set-access NAME (--open | --allow-ip IP_OR_CIDR...)
  api-user set-reseller NAME (--reseller R | --none)
  api-user delete NAME
  package add NAME [--quota N] [--bandwidth N] [--addondomains N] [--parkeddomains N] [--subdomains N]
                   [--email-accounts N] [--ftp N] [--sql N] [--maillist N] [--mailquota N]
                   [--feature NAME] [--ipv4 on|off] [--ipv6 on|off] [--shell on|off]
  package list [--json]
  package delete NAME
  admin set-password --password-stdin
  audit [--limit N] [--json]
  events [--limit N] [--json]
  nodes [--json]                   the servers of this store's fleet
  nodes drain NAME | undrain NAME  stop or resume placing new accounts on a server
  move-account USER --to NAME      moves an account, its files, mail and certificate to another server
  migrate-store --from sqlite:PATH --to postgres://…
`;

const OPTIONS = parseArgsOptions(
  Object.assign({}, COMMON_OPTIONS, SERVER_OPTIONS, ...commands.map((command) => command.options)),
);

/** Runs one command line; returns the exit status. */
export async function main(
  argv: string[],
  io: Io = { stdin: readStdin, out: (t) => process.stdout.write(t) },
) {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`berth: ${(error as Error).message.split('\n')[0]}\n${USAGE}`);
    return 2;
  }
  const [name, ...args] = parsed.positionals;
  const flags = parsed.values as Flags;
  if (flags.help || name === undefined || name === 'help') {
    io.out(USAGE);
    return name === undefined && !flags.help ? 2 : 0;
  }
  try {
    const command = commands.find((c) => c.name === name);
    if (!command) throw new UsageError(`unknown command ${name}`);
    return await command.run(args, flags, io);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`berth: ${error.message}\n${USAGE}`);
      return 2;
    }
    process.stderr.write(`berth: ${(error as Error).message.replace(/\s+/g, ' ')}\n`);
    return 1;
  }
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
