import { serveUntilSignalled } from '../../server.ts';
import type { Command } from '../command.ts';
import { commandConfig, SERVER_OPTIONS } from '../configuration.ts';

export const serveCommand: Command = {
  name: 'serve',
  summary: "runs the server: the administrator's and resellers' APIs, the portal, the holders' panel and API",
  usage: [
    'serve [--driver record|linux] [--host H] [--port P] [--reseller-port Q] [--customer-port C] [options]',
  ],
  options: SERVER_OPTIONS,
  configured: true,
  async run(_args, flags) {
    await serveUntilSignalled(commandConfig(flags));
    return 0;
  },
};
