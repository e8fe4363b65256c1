import { audited, CLI } from '../../operations/audited.ts';
import { type Command, UsageError } from '../command.ts';
import { withServices } from '../configuration.ts';
import { positional } from '../input.ts';

/**
 * Moves an account to another server of the fleet: its server copies it there, the store switches,
 * then its old server removes it. A failure before the switch leaves it whole where it was.
 */
export const moveAccountCommand: Command = {
  name: 'move-account',
  summary: 'moves an account, its files, mail and certificate to another server of the fleet',
  usage: ['move-account USER --to NAME'],
  options: {
    to: { type: 'string', value: 'NAME', help: 'the server to move it to (berth nodes lists them)' },
  },
  configured: true,
  run: (args, flags, io) =>
    withServices(flags, async (services) => {
      const user = positional(args, 0, 'the account to move');
      const to = flags.to;
      if (typeof to !== 'string') throw new UsageError('move-account needs --to NAME, the server to move to');
      const report = await audited(services.store.db, CLI, 'move-account', user, () =>
        services.fleet.requestMove(user, to),
      );
      io.out(`Account ${user} moved from ${report.from} to ${report.to}\n`);
      if (!report.removed)
        io.out(
          `The server ${report.from} could not remove everything of it yet; it does when it starts again (berth doctor there shows what is left)\n`,
        );
      return 0;
    }),
};
