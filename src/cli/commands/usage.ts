import { refreshUsage } from '../../operations/maintenance.ts';
import { type Command, UsageError } from '../command.ts';
import { SERVER_OPTIONS, withServices } from '../configuration.ts';

export const usageCommand: Command = {
  name: 'usage',
  summary: "measures every account's disk and bandwidth usage now (serve does it every 15 min)",
  usage: ['usage refresh [--system-root DIR]'],
  options: { 'system-root': SERVER_OPTIONS['system-root'] },
  configured: true,
  async run(args, flags, io) {
    if (args[0] !== 'refresh') throw new UsageError('the usage command is: usage refresh');
    return withServices(flags, async (services) => {
      io.out(`Usage refreshed for ${await refreshUsage(services)} account(s)\n`);
      return 0;
    });
  },
};
