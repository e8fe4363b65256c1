// The server's configuration: defaults, then <data-dir>/berth.toml, then environment variables,
// then command-line flags (each later source wins). Documented in docs/configuration.md.
import { join, resolve } from 'node:path';
import { fromEnvironment } from './environment.ts';
import { fromFile } from './file.ts';
import { signalThroughPidFile } from './linux.ts';
import { type Config, ConfigError, type ConfigOverrides, defaultDataDir, defaults } from './settings.ts';

export { parseAdvertiseUrl, parseHost, parseNodeName, parsePort } from './environment.ts';
export { configTemplate, FILE_KEYS } from './file.ts';
export type { LinuxComponentName, LinuxConfig } from './linux.ts';
export {
  type AcmeConfig,
  type BackupConfig,
  type Config,
  ConfigError,
  type ConfigOverrides,
  defaultDataDir,
  type LimitsConfig,
  type Webhook,
} from './settings.ts';

const SECTIONS = ['lockout', 'ipPool', 'linux', 'acme', 'limits', 'backup'] as const;

/** `over` laid over `base`: a value left undefined keeps the one below; sections merge key by key. */
function merge(base: Config, over: ConfigOverrides): Config {
  const out = { ...base } as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(over)) {
    if (value !== undefined && !(SECTIONS as readonly string[]).includes(key)) out[key] = value;
  }
  for (const section of SECTIONS) {
    const merged: Record<string, unknown> = { ...base[section] };
    for (const [key, value] of Object.entries(over[section] ?? {}))
      if (value !== undefined) merged[key] = value;
    out[section] = merged;
  }
  return out as unknown as Config;
}

/** The rules between settings, once every source is laid over the defaults. */
function check(config: Config): Config {
  // Without a configured list, the name servers follow the host name, however it was set.
  if (config.nameservers.length === 0)
    config.nameservers = [`ns1.${config.hostName}`, `ns2.${config.hostName}`];
  if (config.database !== null && !/^postgres(ql)?:\/\//.test(config.database)) {
    throw new ConfigError('the database must be a postgres:// URL');
  }
  return config;
}

export function loadConfig(overrides: ConfigOverrides = {}): Config {
  const dataDir = resolve(overrides.dataDir ?? defaultDataDir());
  const base = defaults(dataDir);
  const withFile = merge(base, fromFile(join(dataDir, 'berth.toml')));
  const config = merge(merge(withFile, fromEnvironment()), overrides);
  // A reload left at its default signals the master of the pid file configured, whichever it is.
  const { linux } = config;
  if (linux.reloadWeb === base.linux.reloadWeb)
    linux.reloadWeb = signalThroughPidFile('-HUP', linux.nginxPidFile);
  return check(config);
}
