import { CLI } from '../../operations/audited.ts';
import { execute } from '../../operations/execute.ts';
import { kinds, type RawParams } from '../../operations/operation.ts';
import { packageFields } from '../../operations/package-params.ts';
import { apiOperations } from '../../operations/registry.ts';
import type { Services } from '../../services.ts';
import { listPackages } from '../../store/packages.ts';
import { type Command, type Options, UsageError } from '../command.ts';
import { withServices } from '../configuration.ts';
import { positional } from '../input.ts';
import { JSON_OPTION, printListing } from '../output.ts';

const valueName = (kind: unknown) =>
  kind === kinds.switch ? 'on|off' : kind === kinds.featureList ? 'NAME' : 'N';

/** addpkg's fields, each an option of `package add` named as the API names it, - for _. */
const PACKAGE_OPTIONS: Options = Object.fromEntries(
  Object.entries(packageFields).map(([name, spec]) => [
    name.replace('_', '-'),
    {
      type: 'string',
      value: valueName(spec.kind),
      help: `${spec.description[0]!.toLowerCase()}${spec.description.slice(1).replaceAll('`', '')}`,
    },
  ]),
);

/** Runs an API operation as the administrator, through the same `execute` as the HTTP API. */
export async function runAsAdministrator(services: Services, name: string, params: Record<string, string>) {
  const operation = apiOperations.find(name);
  if (!operation) throw new Error(`no operation ${name}`);
  const raw: RawParams = new Map(Object.entries(params).map(([key, value]) => [key, [value]]));
  return execute(services, {
    operation,
    params: raw,
    address: CLI.address,
    claimedUser: 'root',
    identify: async () => CLI,
  });
}

export const packageCommand: Command = {
  name: 'package',
  summary: 'adds, lists and deletes the packages accounts are created with (addpkg, killpkg)',
  usage: [
    'package add NAME [--quota N] [--bandwidth N] [--email-accounts N] [--shell on|off] [...]',
    'package list [--json]',
    'package delete NAME',
  ],
  options: { ...PACKAGE_OPTIONS, json: JSON_OPTION },
  configured: true,
  async run(args, flags, io) {
    const action = positional(args, 0, 'package command (add, list, delete)');
    if (action !== 'add' && action !== 'list' && action !== 'delete')
      throw new UsageError(`unknown package command ${action}`);
    return withServices(flags, async (services) => {
      if (action === 'add') {
        const params: Record<string, string> = { name: positional(args, 1, 'package name') };
        for (const field of Object.keys(PACKAGE_OPTIONS)) {
          const value = flags[field];
          if (typeof value === 'string') params[field.replace('-', '_')] = value;
        }
        io.out(`${(await runAsAdministrator(services, 'addpkg', params)).info}\n`);
      } else if (action === 'delete') {
        const name = positional(args, 1, 'package name');
        io.out(`${(await runAsAdministrator(services, 'killpkg', { name })).info}\n`);
      } else {
        const packages = await listPackages(services.store.db);
        const show = (n: number | null) => (n === null ? 'unlimited' : String(n));
        const onOff = (on: boolean) => (on ? 'on' : 'off');
        printListing(
          io,
          flags,
          packages,
          ['NAME', 'QUOTA', 'BANDWIDTH', 'FEATURE', 'SHELL', 'IPV4', 'IPV6'],
          packages.map((pkg) => [
            pkg.name,
            show(pkg.limits.quota),
            show(pkg.limits.bandwidth),
            pkg.feature,
            onOff(pkg.shell),
            onOff(pkg.ipv4),
            onOff(pkg.ipv6),
          ]),
        );
      }
      return 0;
    });
  },
};
