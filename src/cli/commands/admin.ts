import { setPortalPassword } from '../../auth/portal-password.ts';
import { CLI } from '../../operations/audited.ts';
import { type Command, UsageError } from '../command.ts';
import { withServices } from '../configuration.ts';
import { PASSWORD_STDIN_OPTION, passwordFromStdin } from '../input.ts';

export const adminCommand: Command = {
  name: 'admin',
  summary: 'sets the portal password of the administrator, root',
  usage: ['admin set-password --password-stdin'],
  options: { 'password-stdin': PASSWORD_STDIN_OPTION },
  configured: true,
  async run(args, flags, io) {
    if (args[0] !== 'set-password') throw new UsageError('the admin command is: admin set-password');
    return withServices(flags, async (services) => {
      const password = await passwordFromStdin(flags, io);
      await setPortalPassword(services, password, CLI);
      io.out('Portal password for root changed\n');
      return 0;
    });
  },
};
