// The shared services every entry point (HTTP, CLI, portal) runs operations with.
import { type DestinationStream, type Logger, pino } from 'pino';
import { Authenticator } from './auth/authenticate.ts';
import { CryptPool } from './auth/crypt-pool.ts';
import { Lockout } from './auth/lockout.ts';
import type { Config } from './config/index.ts';
import { Dispatcher } from './events/dispatcher.ts';
import { Fleet } from './fleet/fleet.ts';
import { Metrics } from './http/prometheus.ts';
import type { Driver } from './provision/driver.ts';
import { Journal } from './provision/journal.ts';
import { recordDriver } from './provision/record/driver.ts';
import { openStore, type Store } from './store/open.ts';

export interface Services {
  config: Config;
  metrics: Metrics;
  /** Sends recorded events to hooks and webhooks; serve starts its timer. */
  dispatcher: Dispatcher;
  journal: Journal;
  /** The other servers sharing the store: placement, and changes made on their systems. */
  fleet: Fleet;
  store: Store;
  driver: Driver;
  crypt: CryptPool;
  lockout: Lockout;
  auth: Authenticator;
  log: Logger;
  now: () => Date;
  close(): Promise<void>;
}

/** Log options shared by the server and the CLI: JSON lines, with secrets never written. */
export const LOG_REDACT = {
  paths: [
    'req.headers["x-api-password"]',
    'req.headers.authorization',
    'req.headers.cookie',
    'password',
    'current_password',
    'apiauth',
    'token',
    '*.password',
    '*.current_password',
    '*.apiauth',
    '*.token',
  ],
  censor: '[redacted]',
};

interface LoggedRequest {
  method: string;
  url: string;
  ip?: string;
  socket?: { remoteAddress?: string };
}

/** A request in the log: its method, path without the query string (it may hold secrets), peer. */
function serializeRequest(request: LoggedRequest) {
  return {
    method: request.method,
    path: request.url.split('?')[0],
    remoteAddress: request.ip ?? request.socket?.remoteAddress,
  };
}

/** Berth's log: JSON lines on standard output, or on `destination`. */
export function createLogger(
  level = process.env.BERTH_LOG_LEVEL ?? 'info',
  destination?: DestinationStream,
): Logger {
  return pino(
    { level, redact: LOG_REDACT, base: { service: 'berth' }, serializers: { req: serializeRequest } },
    destination,
  );
}

/** The linux driver, loaded only when configured. */
async function linux(config: Config, crypt: CryptPool): Promise<Driver> {
  const [{ linuxDriver }, { execRunner }] = await Promise.all([
    import('./provision/linux/driver.ts'),
    import('./provision/linux/run.ts'),
  ]);
  return linuxDriver({ config, runner: execRunner(), hashPassword: (password) => crypt.hash(password) });
}

export async function openServices(
  config: Config,
  options: { log?: Logger; driver?: Driver; cryptThreads?: number } = {},
): Promise<Services> {
  const log = options.log ?? createLogger();
  const store = await openStore(config.dataDir, config.database);
  const crypt = new CryptPool(options.cryptThreads);
  const driver = options.driver ?? (config.driver === 'linux' ? await linux(config, crypt) : recordDriver());
  const metrics = new Metrics();
  const lockout = new Lockout(
    store.db,
    config.lockout,
    Date.now,
    () => metrics.lockout(),
    config.trustedAddresses,
  );
  const auth = new Authenticator(store.db, crypt, lockout, () => metrics.authFailure());
  const journal = new Journal(config.dataDir);
  const fleet = new Fleet({ config, store, driver, journal, log });
  const services: Services = {
    config,
    metrics,
    dispatcher: undefined as unknown as Dispatcher,
    journal,
    fleet,
    store,
    driver,
    crypt,
    lockout,
    auth,
    log,
    now: () => new Date(),
    async close() {
      await services.dispatcher.stop();
      fleet.close();
      await driver.close();
      await crypt.close();
      await store.close();
    },
  };
  services.dispatcher = new Dispatcher(services);
  return services;
}
