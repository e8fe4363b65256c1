// The environment variables and the command-line flags a server is started with (docs/configuration.md).
import { listenAddress, NODE_NAME, Refused, urlValue } from './readers.ts';
import { ConfigError, type ConfigOverrides } from './settings.ts';

function switchEnv(name: string): boolean | undefined {
  const value = process.env[name]?.toLowerCase();
  if (value === undefined || value === '') return undefined;
  if (['on', '1', 'yes', 'true'].includes(value)) return true;
  if (['off', '0', 'no', 'false'].includes(value)) return false;
  throw new ConfigError(`${name} must be on or off`);
}

function portEnv(name: string): number | undefined {
  const value = process.env[name];
  if (value === undefined || value === '') return undefined;
  return parsePort(value, name);
}

/** An address to listen on, from the environment or a flag (`name` says which). */
export function parseHost(value: string, name: string): string {
  try {
    return listenAddress(value) as string;
  } catch (error) {
    if (error instanceof Refused) throw new ConfigError(`${name} ${error.message}`);
    throw error;
  }
}

export function parsePort(value: string, name: string): number {
  const port = Number(value);
  if (!/^[0-9]+$/.test(value) || port > 65535)
    throw new ConfigError(`${name} must be a port number (0-65535)`);
  return port;
}

/** The settings the environment gives (BERTH_*), as overrides of the file. */
export function fromEnvironment(): ConfigOverrides {
  const driver = process.env.BERTH_DRIVER;
  if (driver !== undefined && driver !== 'record' && driver !== 'linux') {
    throw new ConfigError('BERTH_DRIVER must be record or linux');
  }
  return {
    database: process.env.BERTH_DATABASE_URL || undefined,
    host: process.env.BERTH_HOST ? parseHost(process.env.BERTH_HOST, 'BERTH_HOST') : undefined,
    port: portEnv('BERTH_PORT'),
    resellerPort: portEnv('BERTH_RESELLER_PORT'),
    customerPort: portEnv('BERTH_CUSTOMER_PORT'),
    tls: switchEnv('BERTH_TLS'),
    demo: switchEnv('BERTH_DEMO'),
    driver: driver || undefined,
    nodeName: process.env.BERTH_NODE ? parseNodeName(process.env.BERTH_NODE, 'BERTH_NODE') : undefined,
    advertiseUrl: process.env.BERTH_ADVERTISE_URL
      ? parseAdvertiseUrl(process.env.BERTH_ADVERTISE_URL, 'BERTH_ADVERTISE_URL')
      : undefined,
  };
}

/** A server name given as --node or BERTH_NODE. */
export function parseNodeName(value: string, name: string): string {
  if (!NODE_NAME.test(value))
    throw new ConfigError(`${name} must be a name of lower-case letters, digits and -`);
  return value;
}

/** An address given as --advertise or BERTH_ADVERTISE_URL. */
export function parseAdvertiseUrl(value: string, name: string): string {
  try {
    return urlValue(value) as string;
  } catch {
    throw new ConfigError(
      `${name} must be an https:// address without a path, such as https://b.example.net:5555`,
    );
  }
}
