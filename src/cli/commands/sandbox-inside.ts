import type { Command } from '../command.ts';
import { SERVER_OPTIONS } from '../configuration.ts';
import { positional } from '../input.ts';

/** The sandbox's first process, which `berth sandbox` starts inside its namespaces. */
export const sandboxInsideCommand: Command = {
  name: 'sandbox-inside',
  summary: "the sandbox's first process, started by berth sandbox",
  usage: ['sandbox-inside DIR [--node NAME] [--database postgres://…]'],
  options: { node: SERVER_OPTIONS.node },
  configured: false,
  hidden: true,
  async run(args, flags) {
    const { runInside } = await import('../../sandbox/inside.ts');
    return await runInside(positional(args, 0, 'the sandbox directory'), {
      node: flags.node as string | undefined,
      database: flags.database as string | undefined,
    });
  },
};
