import { listServers, setDraining } from '../../store/servers.ts';
import { type Command, UsageError } from '../command.ts';
import { withServices } from '../configuration.ts';
import { positional } from '../input.ts';
import { JSON_OPTION, printListing } from '../output.ts';

/** The fleet's servers; `drain` and `undrain` stop and resume placing new accounts on one. */
export const nodesCommand: Command = {
  name: 'nodes',
  summary: "the servers of this store's fleet; drain stops placing new accounts on one, undrain resumes",
  usage: ['nodes [--json]', 'nodes drain NAME', 'nodes undrain NAME'],
  options: { json: JSON_OPTION },
  configured: true,
  async run(args, flags, io) {
    const action = args[0];
    if (action !== undefined && action !== 'drain' && action !== 'undrain')
      throw new UsageError('the nodes commands are: nodes, nodes drain NAME, nodes undrain NAME');
    return withServices(flags, async (services) => {
      const { db } = services.store;
      if (action !== undefined) {
        const name = positional(args, 1, 'the server name');
        if (!(await setDraining(db, name, action === 'drain')))
          throw new UsageError(`no server named ${name}`);
        io.out(
          action === 'drain'
            ? `Server ${name} drained: no new account goes there\n`
            : `Server ${name} takes new accounts again\n`,
        );
        return 0;
      }
      const servers = await listServers(db, Date.now());
      printListing(
        io,
        flags,
        servers,
        ['NAME', 'ADDRESS', 'DRIVER', 'STATE', 'WEIGHT', 'ACCOUNTS', 'LAST HEARTBEAT'],
        servers.map((server) => [
          server.name,
          server.advertiseUrl,
          server.driver,
          server.state,
          String(server.weight),
          String(server.accounts),
          `${server.heartbeatAt.toISOString().slice(0, 19).replace('T', ' ')} UTC`,
        ]),
      );
      return 0;
    });
  },
};
