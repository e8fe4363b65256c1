import { inspect } from '../../operations/maintenance.ts';
import type { Command } from '../command.ts';
import { SERVER_OPTIONS, withServices } from '../configuration.ts';

export const doctorCommand: Command = {
  name: 'doctor',
  summary: 'what differs between the store and the system (exit status 1 when something does)',
  usage: ['doctor [--driver record|linux] [--system-root DIR]'],
  options: { driver: SERVER_OPTIONS.driver, 'system-root': SERVER_OPTIONS['system-root'] },
  configured: true,
  run: (_args, flags, io) =>
    withServices(flags, async (services) => {
      const differences = await inspect(services);
      for (const line of differences) io.out(`${line}\n`);
      io.out(differences.length === 0 ? 'No difference between the store and the system.\n' : '');
      return differences.length === 0 ? 0 : 1;
    }),
};
