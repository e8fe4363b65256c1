import {
  bindApiUser,
  createApiUser,
  deleteApiUser,
  listApiUsers,
  resetApiUserPassword,
  setApiUserAccess,
} from '../../auth/api-users.ts';
import { CLI } from '../../operations/audited.ts';
import type { Services } from '../../services.ts';
import { type Command, type Flags, type Io, UsageError } from '../command.ts';
import { withServices } from '../configuration.ts';
import { PASSWORD_STDIN_OPTION, passwordFromStdin, positional } from '../input.ts';
import { JSON_OPTION, printListing } from '../output.ts';

const ACTIONS = ['create', 'list', 'reset-password', 'set-access', 'set-reseller', 'delete'] as const;

/** The API users billing software signs in as. */
export const apiUserCommand: Command = {
  name: 'api-user',
  summary: 'creates, lists, changes and deletes the API users billing software signs in as',
  usage: [
    'api-user create NAME --password-stdin [--allow-ip IP_OR_CIDR]... [--reseller R]',
    'api-user list [--json]',
    'api-user reset-password NAME --password-stdin',
    'api-user set-access NAME (--open | --allow-ip IP_OR_CIDR...)',
    'api-user set-reseller NAME (--reseller R | --none)',
    'api-user delete NAME',
  ],
  options: {
    'password-stdin': PASSWORD_STDIN_OPTION,
    'allow-ip': {
      type: 'string',
      multiple: true,
      value: 'IP_OR_CIDR',
      help: 'an address or range it may call from (repeat for more); none: from anywhere',
    },
    open: { type: 'boolean', help: 'it may call from anywhere' },
    reseller: { type: 'string', value: 'R', help: 'it acts as reseller R, on its accounts only' },
    none: { type: 'boolean', help: 'it is bound to no reseller' },
    json: JSON_OPTION,
  },
  configured: true,
  async run(args, flags, io) {
    const action = positional(args, 0, `api-user command (${ACTIONS.join(', ')})`);
    if (!(ACTIONS as readonly string[]).includes(action))
      throw new UsageError(`unknown api-user command ${action}`);
    return withServices(flags, async (services) => {
      await apiUserAction(services, action, args, flags, io);
      return 0;
    });
  },
};

async function apiUserAction(services: Services, action: string, args: string[], flags: Flags, io: Io) {
  const { db } = services.store;
  const allowIps = (flags['allow-ip'] as string[] | undefined) ?? [];
  switch (action) {
    case 'create': {
      const name = positional(args, 1, 'API user name');
      const password = await passwordFromStdin(flags, io);
      const user = await createApiUser(
        db,
        services.crypt,
        {
          name,
          password,
          allowedIps: allowIps,
          reseller: (flags.reseller as string | undefined) ?? null,
        },
        CLI,
      );
      const access = user.access === 'open' ? 'open access' : `restricted to ${user.allowedIps.join(', ')}`;
      io.out(
        `Created API user ${user.name} (${access}${user.reseller ? `, bound to reseller ${user.reseller}` : ''})\n`,
      );
      return;
    }
    case 'list': {
      const users = await listApiUsers(db);
      printListing(
        io,
        flags,
        users.map(({ passwordHash: _, ...user }) => user),
        ['NAME', 'ACCESS', 'ALLOWED IPS', 'RESELLER', 'CREATED', 'LAST USED'],
        users.map((user) => [
          user.name,
          user.access,
          user.allowedIps.join(',') || '-',
          user.reseller ?? '-',
          user.createdAt.toISOString(),
          user.lastUsedAt?.toISOString() ?? 'never',
        ]),
      );
      return;
    }
    case 'reset-password': {
      const name = positional(args, 1, 'API user name');
      await resetApiUserPassword(db, services.crypt, name, await passwordFromStdin(flags, io), CLI);
      io.out(`Password of API user ${name} reset\n`);
      return;
    }
    case 'set-access': {
      const name = positional(args, 1, 'API user name');
      if (Boolean(flags.open) === allowIps.length > 0)
        throw new UsageError('give either --open or --allow-ip');
      await setApiUserAccess(db, name, allowIps, CLI);
      io.out(`Access of API user ${name} set to ${allowIps.length > 0 ? allowIps.join(', ') : 'open'}\n`);
      return;
    }
    case 'set-reseller': {
      const name = positional(args, 1, 'API user name');
      const reseller = flags.reseller as string | undefined;
      if ((reseller === undefined) === !flags.none)
        throw new UsageError('give either --reseller R or --none');
      await bindApiUser(db, name, reseller ?? null, CLI);
      io.out(
        `API user ${name} ${reseller ? `bound to reseller ${reseller}` : 'no longer bound to a reseller'}\n`,
      );
      return;
    }
    case 'delete': {
      const name = positional(args, 1, 'API user name');
      await deleteApiUser(db, name, CLI);
      io.out(`Deleted API user ${name}\n`);
      return;
    }
  }
}
