import { resolve } from 'node:path';
import { defaultDataDir, parseNodeName } from '../../config/index.ts';
import { runSandbox, sandboxExec } from '../../sandbox/sandbox.ts';
import { isPostgresUrl } from '../../store/open.ts';
import { type Command, UsageError } from '../command.ts';
import { SERVER_OPTIONS } from '../configuration.ts';

export const sandboxCommand: Command = {
  name: 'sandbox',
  summary: 'a throwaway hosting server on this machine (needs root); exec runs a command inside it',
  usage: ['sandbox [--node NAME --database postgres://…]', 'sandbox exec -- CMD [ARG]...'],
  options: { node: SERVER_OPTIONS.node },
  configured: false,
  async run(args, flags, io) {
    const dir = resolve((flags['data-dir'] as string | undefined) ?? defaultDataDir());
    if (args[0] === 'exec') return await sandboxExec(dir, args.slice(1));
    if (args[0] !== undefined) throw new UsageError('the sandbox commands are: sandbox, sandbox exec -- CMD');
    const node = flags.node === undefined ? undefined : parseNodeName(String(flags.node), '--node');
    const database = flags.database as string | undefined;
    // Sandboxes on one PostgreSQL store make a fleet.
    if (database !== undefined && !isPostgresUrl(database))
      throw new UsageError('a fleet of sandboxes shares a PostgreSQL store: --database postgres://…');
    return await runSandbox(dir, (line) => io.out(`${line}\n`), { node, database });
  },
};
