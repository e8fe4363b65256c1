// The server's configuration as a command sees it: berth.toml and the environment, overridden by
// serve's options, which every configured command takes so that it works as that server would.

import { resolve } from 'node:path';
import {
  type Config,
  type ConfigOverrides,
  loadConfig,
  parseAdvertiseUrl,
  parseHost,
  parseNodeName,
  parsePort,
} from '../config/index.ts';
import { createLogger, openServices, type Services } from '../services.ts';
import { type Flags, type Options, UsageError } from './command.ts';

export const SERVER_OPTIONS = {
  driver: {
    type: 'string',
    value: 'record|linux',
    help: 'record keeps state only; linux provisions the system',
  },
  'system-root': { type: 'string', value: 'DIR', help: 'the linux driver works under DIR instead of /' },
  host: { type: 'string', value: 'H', help: 'the address the listeners bind (default 0.0.0.0)' },
  port: { type: 'string', value: 'P', help: 'the administrator API and portal port (default 5555)' },
  'reseller-port': { type: 'string', value: 'Q', help: 'the reseller API port (default 4444)' },
  'customer-port': {
    type: 'string',
    value: 'C',
    help: "the account holders' panel and API port (default 2083)",
  },
  'no-tls': { type: 'boolean', help: 'plain HTTP, for a proxy in front or a test' },
  demo: { type: 'boolean', help: 'a demonstration server' },
  node: { type: 'string', value: 'NAME', help: "this server's name in its fleet (default the host name)" },
  advertise: { type: 'string', value: 'URL', help: "where the fleet's other servers reach this one" },
} as const satisfies Options;

function serveOverrides(flags: Flags): ConfigOverrides {
  const systemRoot = flags['system-root'] as string | undefined;
  const driver = flags.driver as string | undefined;
  if (driver !== undefined && driver !== 'record' && driver !== 'linux') {
    throw new UsageError('--driver is record or linux');
  }
  return {
    host: flags.host === undefined ? undefined : parseHost(String(flags.host), '--host'),
    port: flags.port === undefined ? undefined : parsePort(String(flags.port), '--port'),
    resellerPort:
      flags['reseller-port'] === undefined
        ? undefined
        : parsePort(String(flags['reseller-port']), '--reseller-port'),
    customerPort:
      flags['customer-port'] === undefined
        ? undefined
        : parsePort(String(flags['customer-port']), '--customer-port'),
    tls: flags['no-tls'] ? false : undefined,
    demo: flags.demo ? true : undefined,
    driver,
    nodeName: flags.node === undefined ? undefined : parseNodeName(String(flags.node), '--node'),
    advertiseUrl:
      flags.advertise === undefined ? undefined : parseAdvertiseUrl(String(flags.advertise), '--advertise'),
    ...(systemRoot !== undefined && { linux: { systemRoot: resolve(systemRoot) } }),
  };
}

/** The configuration of the server this command works as. */
export function commandConfig(flags: Flags): Config {
  const dataDir = flags['data-dir'] as string | undefined;
  const database = flags.database as string | undefined;
  return loadConfig({ dataDir, database, ...serveOverrides(flags) });
}

/** Runs `work` with the configured server's store, driver and fleet, closed when it ends. */
export async function withServices<T>(flags: Flags, work: (services: Services) => Promise<T>): Promise<T> {
  const config = commandConfig(flags);
  const services = await openServices(config, { log: createLogger('warn'), cryptThreads: 1 });
  try {
    return await work(services);
  } finally {
    await services.close();
  }
}
