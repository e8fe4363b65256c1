import type { Command } from '../command.ts';
import { commandConfig, SERVER_OPTIONS } from '../configuration.ts';
import { initDataDir } from '../init.ts';

export const initCommand: Command = {
  name: 'init',
  summary: 'prepares the data directory: berth.toml, the TLS certificate, the portal password',
  usage: ['init [--driver record|linux] [--system-root DIR]'],
  options: { driver: SERVER_OPTIONS.driver, 'system-root': SERVER_OPTIONS['system-root'] },
  configured: true,
  async run(_args, flags, io) {
    for (const line of await initDataDir(commandConfig(flags))) io.out(`${line}\n`);
    io.out('Ready: start the server with "berth serve", or install deploy/berth.service.\n');
    return 0;
  },
};
