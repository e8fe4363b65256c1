// Starts the admin, reseller and customer listeners on shared services, and stops them gracefully: on
// SIGTERM or SIGINT no new connection is taken, calls in flight finish, then the process exits.

import { X509Certificate } from 'node:crypto';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { ensurePortalPassword, PORTAL_PASSWORD_FILE, portalPasswordNotice } from './auth/portal-password.ts';
import { readBackupEnvironment } from './config/backup-environment.ts';
import type { Config } from './config/index.ts';
import { profileOf } from './fleet/servers.ts';
import { loadCertificate } from './http/tls.ts';
import { startBackupWorker } from './operations/backup-jobs.ts';
import {
  claimUnplacedAccounts,
  inspect,
  ownAccounts,
  recoverInterruptedCalls,
  refreshUsage,
  settleUids,
  USAGE_REFRESH_MS,
} from './operations/maintenance.ts';
import { openServices, type Services } from './services.ts';
import { findAccount } from './store/accounts.ts';
import { objectsOf } from './store/objects.ts';
import { forgetCommitsBefore, HEARTBEAT_MS, heartbeat, registerServer } from './store/servers.ts';

/** A transaction's commit mark is kept a day: long after every server has settled its steps. */
const COMMIT_MARKS_KEPT_MS = 24 * 3600_000;

export interface RunningServer {
  services: Services;
  admin: FastifyInstance;
  reseller: FastifyInstance;
  /** The account holders' panel and API (CONTRACT §14). */
  customer: FastifyInstance;
  /** Where each listener took its port (useful with port 0). */
  ports: { admin: number; reseller: number; customer: number };
  close(): Promise<void>;
}

/** Where the store is, for people: the data directory, or the PostgreSQL server without password. */
function storeName(config: Config): string {
  if (!config.database) return config.dataDir;
  const url = new URL(config.database);
  return `PostgreSQL ${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname}`;
}

function boundPort(app: FastifyInstance): number {
  const address = app.server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/**
 * Shows a portal password made at this start where the administrator reads it once and no log
 * keeps it: on the terminal (standard error) when there is one, else in a file of the data
 * directory only root can read, which `berth admin set-password` removes. Returns the log fields
 * saying where.
 */
function showInitialPortalPassword(dataDir: string, password: string): Record<string, string> {
  if (process.stderr.isTTY) {
    process.stderr.write(`${portalPasswordNotice(password)}\n`);
    return { shown: 'on the terminal' };
  }
  const file = join(dataDir, PORTAL_PASSWORD_FILE);
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return { file };
}

export async function startServer(config: Config): Promise<RunningServer> {
  const services = await openServices(config);
  const { log } = services;
  await services.store.startBackgroundWork((error) => log.error({ error }, 'the store cannot be written'));
  if (!config.tls) log.warn('TLS is off (--no-tls): serve only behind a TLS-terminating proxy');
  const tls = config.tls ? await loadCertificate(config) : null;
  // Credentials others could read are refused before anything runs with them.
  if (services.driver.backups) readBackupEnvironment(config.backup.environmentFile);
  await services.driver.prepare?.();
  const password = await ensurePortalPassword(services.store.db, services.crypt);
  for (const line of await recoverInterruptedCalls(services))
    log.warn({ recovery: line }, 'recovered an interrupted call');
  for (const failure of (await services.driver.resume?.(await ownAccounts(services), (user) =>
    objectsOf(services.store.db, user),
  )) ?? [])
    log.error({ account: failure }, 'could not start what runs for an account');
  const claimed = await claimUnplacedAccounts(services);
  if (claimed > 0)
    log.info({ accounts: claimed, server: config.nodeName }, 'claimed the accounts this server holds');
  await settleUids(services);
  const admin = buildApp(services, { listener: 'admin', tls });
  const reseller = buildApp(services, { listener: 'reseller', tls });
  const customer = buildApp(services, { listener: 'customer', tls });
  // Fastify names every listener http: (it does not know the server the factory made).
  const scheme = config.tls ? 'https' : 'http';
  const listenTextResolver = (address: string) => `listening at ${address.replace(/^http:/, `${scheme}:`)}`;
  // Fastify writes the line itself only when it has the log, at debug (app.ts).
  const listen = async (app: typeof admin, listener: string, port: number) => {
    const address = await app.listen({ host: config.host, port, listenTextResolver });
    if (!log.isLevelEnabled('debug')) log.info({ listener }, listenTextResolver(address));
  };
  try {
    await listen(admin, 'admin', config.port);
    await listen(reseller, 'reseller', config.resellerPort);
    await listen(customer, 'customer', config.customerPort);
  } catch (error) {
    await Promise.allSettled([admin.close(), reseller.close(), customer.close()]);
    await services.close();
    throw error;
  }
  const ports = { admin: boundPort(admin), reseller: boundPort(reseller), customer: boundPort(customer) };
  // Port 0 takes a free one: the configuration then says which, for the URLs that name the customer
  // listener (create_user_session's).
  config.customerPort = ports.customer;
  const self = {
    name: config.nodeName,
    advertiseUrl: config.advertiseUrl ?? `${scheme}://${config.hostName}:${ports.admin}`,
    driver: config.driver,
    tlsFingerprint: tls ? new X509Certificate(tls.cert).fingerprint256 : null,
    weight: config.nodeWeight,
    profile: profileOf(config),
  };
  await services.fleet.ensureSecret();
  await registerServer(services.store.db, self, services.now());
  await services.fleet.refresh();
  services.fleet.start();
  const heartbeatTimer = setInterval(() => {
    const now = services.now();
    Promise.all([
      heartbeat(services.store.db, self.name, now),
      services.fleet.refresh(),
      forgetCommitsBefore(services.store.db, new Date(now.getTime() - COMMIT_MARKS_KEPT_MS)),
    ]).catch((error: unknown) => log.error({ err: error }, 'heartbeat failed'));
  }, HEARTBEAT_MS);
  heartbeatTimer.unref();
  // Where it serves is logged whatever BERTH_LOG_LEVEL says: supervisors and scripts wait for it.
  const startup = log.level === 'silent' ? log : log.child({}, { level: 'info' });
  if (password) {
    startup.warn(
      showInitialPortalPassword(config.dataDir, password),
      'made a portal password for root: read it once, then set your own with berth admin set-password',
    );
  }
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  startup.info(
    {
      driver: config.driver,
      store: storeName(config),
      server: self.name,
      advertise: self.advertiseUrl,
      admin: `${scheme}://${host}:${ports.admin}/`,
      reseller: `${scheme}://${host}:${ports.reseller}/`,
      customer: `${scheme}://${host}:${ports.customer}/`,
    },
    'serving',
  );
  const differences = await inspect(services);
  if (differences.length > 0) log.warn({ differences }, 'the store and the system differ: run berth doctor');
  services.dispatcher.start();
  services.driver.startBackgroundWork?.(
    {
      account: async (user) => {
        const account = await findAccount(services.store.db, user);
        return account && (account.server === null || account.server === config.nodeName)
          ? account
          : undefined;
      },
      accounts: () => ownAccounts(services),
      objects: (user) => objectsOf(services.store.db, user),
    },
    log,
  );
  // Backups are taken by this server's worker, for its accounts, whichever server queued them.
  const backupWorker = services.driver.backups ? startBackupWorker(services) : null;
  // A refresh that outlasts the interval (many homes walked to their time limit) is not doubled.
  let refreshing = false;
  const usageTimer = setInterval(() => {
    if (refreshing) return;
    refreshing = true;
    refreshUsage(services)
      .catch((error: unknown) => log.error({ err: error }, 'usage refresh failed'))
      .finally(() => {
        refreshing = false;
      });
  }, USAGE_REFRESH_MS);
  usageTimer.unref();
  let closing: Promise<void> | null = null;
  return {
    services,
    admin,
    reseller,
    customer,
    ports,
    close() {
      closing ??= (async () => {
        clearInterval(usageTimer);
        clearInterval(heartbeatTimer);
        await backupWorker?.close();
        await Promise.allSettled([admin.close(), reseller.close(), customer.close()]);
        await services.close();
      })();
      return closing;
    },
  };
}

/** Runs until SIGTERM or SIGINT, then shuts down gracefully. */
export async function serveUntilSignalled(config: Config): Promise<void> {
  // Listening for signals before start-up: one that arrives while the server starts stops it as
  // soon as it is up, gracefully, rather than killing the process half-way.
  let received: string | null = null;
  let signalled: (signal: string) => void = (signal) => {
    received = signal;
  };
  const onSignal = (signal: string) => () => signalled(signal);
  process.once('SIGTERM', onSignal('SIGTERM'));
  process.once('SIGINT', onSignal('SIGINT'));
  // Started by npm (npm start, npx berth serve), the server's parent is npm's shell, which exits
  // on SIGTERM without passing it on. The server then stops too, as if signalled, rather than run
  // on as an orphan that nobody can stop the way it was started.
  const parent = process.ppid;
  const watchParent = process.env.npm_command !== undefined && parent !== 1;
  const parentWatch = watchParent
    ? setInterval(() => {
        if (process.ppid !== parent) signalled('parent exited');
      }, 500)
    : null;
  parentWatch?.unref();
  const server = await startServer(config);
  await new Promise<void>((resolve) => {
    signalled = (signal) => {
      if (parentWatch) clearInterval(parentWatch);
      server.services.log.info({ signal }, 'shutting down: finishing calls in flight');
      server.close().then(resolve, resolve);
    };
    if (received !== null) signalled(received);
  });
}
