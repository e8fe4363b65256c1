// `berth <command>`: the server and the administrator's shell tools. Every command takes
// --data-dir and works while a server runs on the same data directory.

import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  bindApiUser,
  createApiUser,
  deleteApiUser,
  listApiUsers,
  resetApiUserPassword,
  setApiUserAccess,
} from '../auth/api-users.ts';
import { setPortalPassword } from '../auth/portal-password.ts';
import {
  ConfigError,
  type ConfigOverrides,
  defaultDataDir,
  loadConfig,
  parseAdvertiseUrl,
  parseHost,
  parseNodeName,
  parsePort,
} from '../config/index.ts';
import { ApiError } from '../core/errors.ts';
import { audited, CLI } from '../operations/audited.ts';
import { execute } from '../operations/execute.ts';
import { inspect, ownAccounts, refreshUsage } from '../operations/maintenance.ts';
import type { RawParams } from '../operations/operation.ts';
import { findOperation } from '../operations/registry.ts';
import { runSandbox, sandboxExec } from '../sandbox/sandbox.ts';
import { serveUntilSignalled } from '../server.ts';
import { createLogger, openServices, type Services } from '../services.ts';
import type { Account } from '../store/accounts.ts';
import { listAudit } from '../store/audit.ts';
import { migrateStore } from '../store/migrate-store.ts';
import { isPostgresUrl } from '../store/open.ts';
import { listPackages } from '../store/packages.ts';
import { listServers, setDraining } from '../store/servers.ts';
import { initDataDir } from './init.ts';

export class UsageError extends Error {
  override name = 'UsageError';
}

const USAGE = `usage: berth <command> [--data-dir DIR] [--database postgres://…]

  init
  serve [--host H] [--port P] [--reseller-port Q] [--no-tls] [--driver record|linux]
        [--system-root DIR] [--demo] [--node NAME] [--advertise URL]
  sandbox [--node NAME --database postgres://…]
                                   a throwaway hosting server on this machine (needs root);
                                   sandboxes on one PostgreSQL store make a fleet
  sandbox exec -- CMD [ARG]...     runs a command inside the running sandbox
  doctor [--system-root DIR]
  certs [--json] [--system-root DIR]
  usage refresh [--system-root DIR]
  api-user create NAME --password-stdin [--allow-ip IP_OR_CIDR]... [--reseller R]
  api-user list [--json]
  api-user reset-password NAME --password-stdin
  api-user set-access NAME (--open | --allow-ip IP_OR_CIDR...)
  api-user set-reseller NAME (--reseller R | --none)
  api-user delete NAME
  package add NAME [--quota N] [--bandwidth N] [--addondomains N] [--parkeddomains N] [--subdomains N]
                   [--email-accounts N] [--ftp N] [--sql N] [--maillist N] [--mailquota N]
                   [--feature NAME] [--ipv4 on|off] [--ipv6 on|off] [--shell on|off]
  package list [--json]
  package delete NAME
  admin set-password --password-stdin
  audit [--limit N] [--json]
  events [--limit N] [--json]
  nodes [--json]                   the servers of this store's fleet
  nodes drain NAME | undrain NAME  stop or resume placing new accounts on a server
  move-account USER --to NAME      moves an account, its files, mail and certificate to another server
  migrate-store --from sqlite:PATH --to postgres://…
`;

const PACKAGE_FIELDS = [
  'quota',
  'bandwidth',
  'addondomains',
  'parkeddomains',
  'subdomains',
  'email-accounts',
  'ftp',
  'sql',
  'maillist',
  'mailquota',
  'feature',
  'ipv4',
  'ipv6',
  'shell',
] as const;

const OPTIONS = {
  'data-dir': { type: 'string' },
  database: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  'reseller-port': { type: 'string' },
  'no-tls': { type: 'boolean' },
  driver: { type: 'string' },
  node: { type: 'string' },
  advertise: { type: 'string' },
  'system-root': { type: 'string' },
  demo: { type: 'boolean' },
  'password-stdin': { type: 'boolean' },
  'allow-ip': { type: 'string', multiple: true },
  open: { type: 'boolean' },
  none: { type: 'boolean' },
  reseller: { type: 'string' },
  json: { type: 'boolean' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  ...Object.fromEntries(PACKAGE_FIELDS.map((name) => [name, { type: 'string' }])),
} as const;

type Flags = Record<string, string | boolean | string[] | undefined>;

interface Io {
  stdin: () => Promise<string>;
  out: (text: string) => void;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function passwordFromStdin(flags: Flags, io: Io): Promise<string> {
  if (!flags['password-stdin'])
    throw new UsageError('give the password on standard input with --password-stdin');
  const text = await io.stdin();
  return text.replace(/\r?\n$/, '');
}

function positional(args: string[], index: number, what: string): string {
  const value = args[index];
  if (value === undefined) throw new UsageError(`missing ${what}`);
  return value;
}

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
    tls: flags['no-tls'] ? false : undefined,
    demo: flags.demo ? true : undefined,
    driver,
    nodeName: flags.node === undefined ? undefined : parseNodeName(String(flags.node), '--node'),
    advertiseUrl:
      flags.advertise === undefined ? undefined : parseAdvertiseUrl(String(flags.advertise), '--advertise'),
    ...(systemRoot !== undefined && { linux: { systemRoot: resolve(systemRoot) } }),
  };
}

/** Runs an API operation as the administrator, through the same `execute` as the HTTP API. */
async function runAsAdministrator(services: Services, name: string, params: Record<string, string>) {
  const operation = findOperation(name);
  if (!operation) throw new Error(`no operation ${name}`);
  const raw: RawParams = new Map(Object.entries(params).map(([key, value]) => [key, [value]]));
  return execute(services, {
    operation,
    params: raw,
    address: CLI.address,
    claimedUser: CLI.apiUser,
    identify: async () => ({ ...CLI, reseller: null }),
  });
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A listing: `json` as indented JSON under --json, else a table of `header` and `rows`. */
function printListing(io: Io, flags: Flags, json: unknown, header: string[], rows: string[][]): void {
  io.out(flags.json ? `${JSON.stringify(json, null, 2)}\n` : `${table([header, ...rows])}\n`);
}

async function apiUserCommand(services: Services, args: string[], flags: Flags, io: Io): Promise<void> {
  const { db } = services.store;
  const action = positional(
    args,
    1,
    'api-user command (create, list, reset-password, set-access, set-reseller, delete)',
  );
  const allowIps = (flags['allow-ip'] as string[] | undefined) ?? [];
  switch (action) {
    case 'create': {
      const name = positional(args, 2, 'API user name');
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
      const name = positional(args, 2, 'API user name');
      await resetApiUserPassword(db, services.crypt, name, await passwordFromStdin(flags, io), CLI);
      io.out(`Password of API user ${name} reset\n`);
      return;
    }
    case 'set-access': {
      const name = positional(args, 2, 'API user name');
      if (Boolean(flags.open) === allowIps.length > 0)
        throw new UsageError('give either --open or --allow-ip');
      await setApiUserAccess(db, name, allowIps, CLI);
      io.out(`Access of API user ${name} set to ${allowIps.length > 0 ? allowIps.join(', ') : 'open'}\n`);
      return;
    }
    case 'set-reseller': {
      const name = positional(args, 2, 'API user name');
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
      const name = positional(args, 2, 'API user name');
      await deleteApiUser(db, name, CLI);
      io.out(`Deleted API user ${name}\n`);
      return;
    }
    default:
      throw new UsageError(`unknown api-user command ${action}`);
  }
}

async function packageCommand(services: Services, args: string[], flags: Flags, io: Io): Promise<void> {
  const action = positional(args, 1, 'package command (add, list, delete)');
  switch (action) {
    case 'add': {
      const params: Record<string, string> = { name: positional(args, 2, 'package name') };
      for (const field of PACKAGE_FIELDS) {
        const value = flags[field];
        if (typeof value === 'string') params[field.replace('-', '_')] = value;
      }
      const result = await runAsAdministrator(services, 'addpkg', params);
      io.out(`${result.info}\n`);
      return;
    }
    case 'list': {
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
      return;
    }
    case 'delete': {
      const result = await runAsAdministrator(services, 'killpkg', {
        name: positional(args, 2, 'package name'),
      });
      io.out(`${result.info}\n`);
      return;
    }
    default:
      throw new UsageError(`unknown package command ${action}`);
  }
}

/**
 * Text as a terminal may show it: control characters (escape sequences, newlines) written as
 * \xNN, so that no stored value, whatever wrote it, can move the cursor or forge a row.
 */
function printable(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

async function auditCommand(services: Services, flags: Flags, io: Io): Promise<void> {
  const limitText = (flags.limit as string | undefined) ?? '50';
  if (!/^[0-9]{1,6}$/.test(limitText) || Number(limitText) < 1)
    throw new UsageError('--limit is a number from 1');
  const entries = await listAudit(services.store.db, { limit: Number(limitText) });
  printListing(
    io,
    flags,
    entries,
    ['TIME', 'API USER', 'RESELLER', 'ADDRESS', 'OPERATION', 'TARGET', 'STATUS'],
    entries.map((e) => {
      const status = e.code ? `${e.status} ${e.code}` : String(e.status);
      return [e.at, e.api_user, e.reseller ?? '-', e.address, e.operation, e.target ?? '-', status].map(
        printable,
      );
    }),
  );
}

/** The delivery log: recent events and what became of each delivery. */
async function eventsCommand(services: Services, flags: Flags, io: Io): Promise<void> {
  const limitText = (flags.limit as string | undefined) ?? '50';
  if (!/^[0-9]{1,6}$/.test(limitText) || Number(limitText) < 1)
    throw new UsageError('--limit is a number from 1');
  const { db } = services.store;
  const events = await db
    .selectFrom('events')
    .selectAll()
    .orderBy('created_ms', 'desc')
    .limit(Number(limitText))
    .execute();
  const deliveries = events.length
    ? await db
        .selectFrom('deliveries')
        .selectAll()
        .where(
          'event_id',
          'in',
          events.map((e) => e.id),
        )
        .execute()
    : [];
  const rows = events.map((event) => ({
    id: event.id,
    type: event.type,
    at: new Date(Number(event.created_ms)).toISOString(),
    account: (JSON.parse(event.payload) as { account: string }).account,
    deliveries: deliveries
      .filter((d) => d.event_id === event.id)
      .map((d) => ({
        target: d.target,
        attempts: Number(d.attempts),
        delivered: d.delivered_ms === null ? null : new Date(Number(d.delivered_ms)).toISOString(),
        error: d.last_error,
      })),
  }));
  printListing(
    io,
    flags,
    rows,
    ['TIME', 'EVENT', 'ACCOUNT', 'TARGET', 'ATTEMPTS', 'STATE'],
    rows.flatMap((row) =>
      row.deliveries.map((d) => [
        row.at,
        row.type,
        row.account,
        d.target,
        String(d.attempts),
        d.delivered ? 'delivered' : (d.error ?? 'pending'),
      ]),
    ),
  );
}

async function migrateStoreCommand(flags: Flags, io: Io): Promise<void> {
  const from = flags.from as string | undefined;
  const to = flags.to as string | undefined;
  if (!from?.startsWith('sqlite:') || !to || !isPostgresUrl(to)) {
    throw new UsageError('migrate-store takes --from sqlite:PATH --to postgres://…');
  }
  const counts = await migrateStore(from.slice('sqlite:'.length), to);
  const summary = Object.entries(counts)
    .map(([table, n]) => `${table} ${n}`)
    .join(', ');
  io.out(`Copied every row, counts checked: ${summary}\n`);
}

/**
 * Moves an account to another server of the fleet: its server copies it there, the store switches,
 * then its old server removes it. A failure before the switch leaves it whole where it was.
 */
async function moveAccountCommand(services: Services, args: string[], flags: Flags, io: Io): Promise<void> {
  const user = positional(args, 1, 'the account to move');
  const to = flags.to;
  if (typeof to !== 'string') throw new UsageError('move-account needs --to NAME, the server to move to');
  const report = await audited(services.store.db, CLI, 'move-account', user, () =>
    services.fleet.requestMove(user, to),
  );
  io.out(`Account ${user} moved from ${report.from} to ${report.to}\n`);
  if (!report.removed)
    io.out(
      `The server ${report.from} could not remove everything of it yet; it does when it starts again (berth doctor there shows what is left)\n`,
    );
}

/** The fleet's servers; `drain` and `undrain` stop and resume placing new accounts on one. */
async function nodesCommand(services: Services, args: string[], flags: Flags, io: Io): Promise<void> {
  const { db } = services.store;
  const action = args[1];
  if (action === 'drain' || action === 'undrain') {
    const name = positional(args, 2, 'the server name');
    if (!(await setDraining(db, name, action === 'drain'))) throw new UsageError(`no server named ${name}`);
    io.out(
      action === 'drain'
        ? `Server ${name} drained: no new account goes there\n`
        : `Server ${name} takes new accounts again\n`,
    );
    return;
  }
  if (action !== undefined)
    throw new UsageError('the nodes commands are: nodes, nodes drain NAME, nodes undrain NAME');
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
}

/** Each account's certificate: where it stands, who issued it, when it expires or is tried again. */
function certsCommand(services: Services, accounts: readonly Account[], flags: Flags, io: Io): void {
  const rows = services.driver.certificates?.(accounts) ?? [];
  const date = (iso?: string) => (iso ? iso.slice(0, 16).replace('T', ' ') : '-');
  printListing(
    io,
    flags,
    rows,
    ['USER', 'DOMAIN', 'STATE', 'ISSUER', 'EXPIRES', 'NEXT', 'LAST ERROR'],
    rows.map((row) => [
      row.user,
      row.domain,
      row.state ?? 'none',
      row.issuer ?? '-',
      date(row.notAfter),
      date(row.nextAttempt),
      printable(row.lastError ?? '-'),
    ]),
  );
}

/** Runs one command line; returns the exit status. */
export async function main(
  argv: string[],
  io: Io = { stdin: readStdin, out: (t) => process.stdout.write(t) },
) {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(`berth: ${(error as Error).message.split('\n')[0]}\n${USAGE}`);
    return 2;
  }
  const args = parsed.positionals;
  const flags = parsed.values as Flags;
  const command = args[0];
  if (flags.help || command === undefined || command === 'help') {
    io.out(USAGE);
    return command === undefined && !flags.help ? 2 : 0;
  }
  let services: Services | undefined;
  try {
    const dataDir = flags['data-dir'] as string | undefined;
    const database = flags.database as string | undefined;
    if (command === 'serve') {
      await serveUntilSignalled(loadConfig({ dataDir, database, ...serveOverrides(flags) }));
      return 0;
    }
    if (command === 'sandbox') {
      const dir = resolve(dataDir ?? defaultDataDir());
      if (args[1] === 'exec') return await sandboxExec(dir, args.slice(2));
      if (args[1] !== undefined)
        throw new UsageError('the sandbox commands are: sandbox, sandbox exec -- CMD');
      const node = flags.node === undefined ? undefined : parseNodeName(String(flags.node), '--node');
      if (database !== undefined && !isPostgresUrl(database))
        throw new UsageError('a fleet of sandboxes shares a PostgreSQL store: --database postgres://…');
      return await runSandbox(dir, (line) => io.out(`${line}\n`), { node, database });
    }
    if (command === 'sandbox-inside') {
      const { runInside } = await import('../sandbox/inside.ts');
      return await runInside(positional(args, 1, 'the sandbox directory'), {
        node: flags.node as string | undefined,
        database,
      });
    }
    if (command === 'migrate-store') {
      await migrateStoreCommand(flags, io);
      return 0;
    }
    // Every command sees the server's configuration: doctor, usage and certs the configured driver.
    const config = loadConfig({ dataDir, database, ...serveOverrides(flags) });
    if (command === 'init') {
      for (const line of await initDataDir(config)) io.out(`${line}\n`);
      io.out('Ready: start the server with "berth serve", or install deploy/berth.service.\n');
      return 0;
    }
    services = await openServices(config, { log: createLogger('warn'), cryptThreads: 1 });
    switch (command) {
      case 'api-user':
        await apiUserCommand(services, args, flags, io);
        break;
      case 'package':
        await packageCommand(services, args, flags, io);
        break;
      case 'admin': {
        if (args[1] !== 'set-password') throw new UsageError('the admin command is: admin set-password');
        const password = await passwordFromStdin(flags, io);
        await setPortalPassword(services, password, CLI);
        io.out('Portal password for root changed\n');
        break;
      }
      case 'audit':
        await auditCommand(services, flags, io);
        break;
      case 'events':
        await eventsCommand(services, flags, io);
        break;

      case 'doctor': {
        const differences = await inspect(services);
        for (const line of differences) io.out(`${line}\n`);
        io.out(differences.length === 0 ? 'No difference between the store and the system.\n' : '');
        return differences.length === 0 ? 0 : 1;
      }
      case 'nodes':
        await nodesCommand(services, args, flags, io);
        break;
      case 'move-account':
        await moveAccountCommand(services, args, flags, io);
        break;
      case 'certs':
        certsCommand(services, await ownAccounts(services), flags, io);
        break;
      case 'usage': {
        if (args[1] !== 'refresh') throw new UsageError('the usage command is: usage refresh');
        io.out(`Usage refreshed for ${await refreshUsage(services)} account(s)\n`);
        break;
      }
      default:
        throw new UsageError(`unknown command ${command}`);
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`berth: ${error.message}\n${USAGE}`);
      return 2;
    }
    const message =
      error instanceof ApiError || error instanceof ConfigError
        ? error.message
        : `${(error as Error).message}`;
    process.stderr.write(`berth: ${message.replace(/\s+/g, ' ')}\n`);
    return 1;
  } finally {
    await services?.close();
  }
}

if (import.meta.main) {
  process.exitCode = await main(process.argv.slice(2));
}
