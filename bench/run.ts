// npm run bench: measures Berth against a bare Node HTTPS server (the machine's ceiling) in the
// same run, and writes docs/benchmarks.md. `--smoke` runs every scenario briefly (the test suite
// does, so that the runner cannot rot); `--out FILE` writes the report elsewhere; `--only a,b` runs
// the scenarios so named (the functions below) and nothing else.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createApiUser } from '../src/auth/api-users.ts';
import { CryptPool } from '../src/auth/crypt-pool.ts';
import { loadConfig } from '../src/config/index.ts';
import { CLI } from '../src/operations/audited.ts';
import { type Account, toRow } from '../src/store/accounts.ts';
import { openStore } from '../src/store/open.ts';
import { type Served, sandboxReloads, serve, startSandbox, steadyLoad } from '../test/process.ts';
import { mailTableChange } from './mail-tables.ts';
import { type Measurement, writeReport } from './report.ts';

const { values: flags } = parseArgs({
  options: { smoke: { type: 'boolean' }, out: { type: 'string' }, only: { type: 'string' } },
});
const SMOKE = flags.smoke === true;
const OUT = flags.out ?? new URL('../docs/benchmarks.md', import.meta.url).pathname;
const DURATION = SMOKE ? 1 : 10;
const SIZES = SMOKE
  ? { list: 200, large: 1000, create: 200 }
  : { list: 10_000, large: 100_000, create: 10_000 };

/** Where the sandbox keeps each site's certificate and its state (linux.cert_dir). */
const CERT_DIR = '/etc/berth/certs';
/** How long the whole-stack scenario waits for the certificates still to order after a fill (9). */
const SETTLE_LIMIT_MS = 15 * 60_000;
/** The DKIM keys made ahead in `berth sandbox` (its `dkim_dir`), and how many it keeps (the default). */
const KEY_POOL_DIR = '/etc/berth/dkim/.pool';
const KEYS_AHEAD = 1000;

const API_USER = 'bench';
const API_PASSWORD = 'bench-password-1';
const HEADERS = { 'x-api-user': API_USER, 'x-api-password': API_PASSWORD };
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

const scratch: string[] = [];
const children: ChildProcess[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'berth-bench-'));
  scratch.push(dir);
  return dir;
}

/** A data directory with the bench API user, `accounts` accounts, and proxies trusted. */
async function prepare(accounts: number): Promise<string> {
  const dataDir = tempDir();
  writeFileSync(
    join(dataDir, 'berth.toml'),
    'trusted_proxies = ["127.0.0.1"]\nhost_name = "bench.example.net"\n',
  );
  const config = loadConfig({ dataDir });
  const store = await openStore(config.dataDir);
  const crypt = new CryptPool(1);
  try {
    await createApiUser(
      store.db,
      crypt,
      {
        name: API_USER,
        password: API_PASSWORD,
        allowedIps: [],
        reseller: null,
      },
      CLI,
    );
    const template: Account = {
      user: '',
      domain: '',
      contactEmail: 'owner@example.com',
      package: 'default',
      feature: 'default',
      owner: 'root',
      homedir: '',
      language: 'en',
      theme: 'default',
      mailserver: 'local',
      dkim: true,
      spf: true,
      useRegistrarNs: false,
      nameservers: ['ns1.bench.example.net', 'ns2.bench.example.net'],
      setupAt: new Date(),
      dedicatedIpv4: null,
      dedicatedIpv6: null,
      shellEnabled: false,
      reseller: null,
      limits: {
        addondomains: null,
        parkeddomains: null,
        subdomains: null,
        email_accounts: 50,
        ftp: 5,
        sql: 5,
        maillist: null,
        bandwidth: 10240,
        quota: 1024,
        mailquota: null,
      },
      suspension: null,
      usage: { quota: 12, bandwidth: 345 },
      server: null,
      uid: null,
    };
    await store.db.transaction().execute(async (trx) => {
      for (let i = 0; i < accounts; i += 500) {
        const rows = [];
        for (let j = i; j < Math.min(accounts, i + 500); j++) {
          const user = `s${j.toString(36).padStart(5, '0')}`;
          rows.push(toRow({ ...template, user, domain: `${user}.example.com`, homedir: `/home/${user}` }));
        }
        await trx.insertInto('accounts').values(rows).execute();
      }
    });
  } finally {
    await crypt.close();
    await store.close();
  }
  return dataDir;
}

async function startBerth(dataDir: string): Promise<Served & { startMs: number }> {
  const started = performance.now();
  // At the log level an installed server runs with.
  const server = await serve(dataDir);
  children.push(server.child);
  // Ready means answering an authenticated call.
  await post(dataDir, server.adminPort, '/api/v1/test_connection/');
  return { ...server, startMs: performance.now() - started };
}

async function startBare(
  dataDir: string,
  listBody?: string,
): Promise<{ port: number; pid: number; startMs: number; stop(): void }> {
  const started = performance.now();
  const args = [
    new URL('bare-server.ts', import.meta.url).pathname,
    join(dataDir, 'tls/cert.pem'),
    join(dataDir, 'tls/key.pem'),
  ];
  if (listBody) args.push(listBody);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      const match = /ready (\d+)/.exec(String(chunk));
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', () => reject(new Error('the bare server exited')));
  });
  return { port, pid: child.pid!, startMs: performance.now() - started, stop: () => child.kill('SIGTERM') };
}

function post(dataDir: string, port: number, path: string, body = ''): Promise<string> {
  return postForm(port, path, body, HEADERS, readFileSync(join(dataDir, 'tls/cert.pem')));
}

/** POSTs a form; `ca` verifies the server (without it, as for the sandbox's own certificate, not). */
function postForm(
  port: number,
  path: string,
  body: string,
  headers: Record<string, string>,
  ca?: Buffer,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { ...headers, ...FORM },
        ...(ca ? { ca, servername: 'localhost' } : { rejectUnauthorized: false }),
        // A connection per call: a kept-alive one left idle past the server's keep-alive timeout
        // can be closed just as a call is sent on it.
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024);
}

type CannonOptions = Parameters<typeof autocannon>[0];

function cannon(options: Omit<CannonOptions, 'url'> & { url: string }): Promise<autocannon.Result> {
  return autocannon({ method: 'POST', duration: DURATION, ...options });
}

function url(port: number, op: string): string {
  return `https://127.0.0.1:${port}/api/v1/${op}/`;
}

interface Probe {
  p99: number;
  failures: number;
}

/** Starts another caller in its own process; resolves with its p99 when it has run `seconds`. */
function probe(
  dataDir: string,
  port: number,
  headers: Record<string, string>,
  seconds = DURATION,
): Promise<Probe> {
  const args = [
    new URL('probe.ts', import.meta.url).pathname,
    String(port),
    '/api/v1/test_connection/',
    JSON.stringify(headers),
    join(dataDir, 'tls/cert.pem'),
    '20',
    String(seconds * 1000),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk;
  });
  return new Promise((resolve, reject) => {
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`the probe exited with ${code}`));
      const { latencies, failures } = JSON.parse(out) as { latencies: number[]; failures: number };
      latencies.sort((a, b) => a - b);
      resolve({
        p99: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
        failures,
      });
    });
  });
}

const measurements: Measurement[] = [];

/**
 * Throughput in turns, Berth then the bare server, each for a part of DURATION: drift in what else
 * the machine is doing falls on both alike, and each is reported as the median of its turns.
 */
async function testConnection(): Promise<void> {
  const dataDir = await prepare(0);
  const berthServer = await startBerth(dataDir);
  const bare = await startBare(dataDir);
  const turns = SMOKE ? 1 : 4;
  const duration = SMOKE ? 1 : DURATION / 2;
  // The two ways billing software sends its credentials: headers, and the form's fields (WHMCS).
  const ways = [
    { name: 'header credentials', options: { connections: 50, headers: HEADERS, duration } },
    {
      name: 'form credentials (apiuser and apiauth in the body)',
      options: {
        connections: 50,
        method: 'POST' as const,
        headers: FORM,
        body: `apiuser=${API_USER}&apiauth=${API_PASSWORD}`,
        duration,
      },
    },
  ];
  for (const [i, way] of ways.entries()) {
    const ours: number[] = [];
    const ceiling: number[] = [];
    let errors = 0;
    for (let turn = 0; turn < turns; turn++) {
      const berthTurn = await cannon({ ...way.options, url: url(berthServer.adminPort, 'test_connection') });
      const bareTurn = await cannon({ ...way.options, url: url(bare.port, 'test_connection') });
      ours.push(berthTurn.requests.average);
      ceiling.push(bareTurn.requests.average);
      errors += berthTurn.non2xx + berthTurn.errors;
    }
    measurements.push({
      scenario: `1${i === 0 ? '' : '′'}. test_connection, ${way.name}, 50 keep-alive connections (median of ${turns} turns each)`,
      metric: 'requests per second',
      berth: median(ours),
      baseline: median(ceiling),
      higherIsBetter: true,
      target: { ratio: 0.85, text: '≥ 85% of the bare server' },
      errors,
    });
  }
  bare.stop();
  await berthServer.stop();
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function listAccounts(): Promise<void> {
  const dataDir = await prepare(SIZES.list);
  const berthServer = await startBerth(dataDir);
  const body = await post(dataDir, berthServer.adminPort, '/api/v1/listaccts/');
  const bodyFile = join(dataDir, 'listaccts.json');
  writeFileSync(bodyFile, body);
  const bare = await startBare(dataDir, bodyFile);
  const options = { connections: 2, headers: HEADERS };
  const ours = await cannon({ ...options, url: url(berthServer.adminPort, 'listaccts') });
  const ceiling = await cannon({ ...options, url: url(bare.port, 'listaccts') });
  measurements.push({
    scenario: `2a. listaccts with ${SIZES.list.toLocaleString('en')} accounts (${(body.length / 1e6).toFixed(1)} MB)`,
    metric: 'median latency, ms',
    berth: ours.latency.p50,
    baseline: ceiling.latency.p50,
    higherIsBetter: false,
    target: { ratio: 1.5, text: '≤ 1.5× the bare server sending the body prebuilt' },
    errors: ours.non2xx + ours.errors,
  });
  bare.stop();
  await berthServer.stop();
}

async function largeStore(): Promise<void> {
  const dataDir = await prepare(SIZES.large);
  // The first start does once-only work (the TLS certificate, the portal password, claiming the
  // accounts for this server); what is measured is a restart, as after an upgrade or a reboot.
  await (await startBerth(dataDir)).stop();
  const berthServer = await startBerth(dataDir);
  const bare = await startBare(dataDir);
  measurements.push({
    scenario: `5b. start-up with ${SIZES.large.toLocaleString('en')} accounts (a restart, until the first answer)`,
    metric: 'ms',
    berth: berthServer.startMs,
    baseline: bare.startMs,
    higherIsBetter: false,
    target: { absolute: 1000, text: 'under 1 s' },
    errors: 0,
  });
  // One full listing of each kind, then the process's resident memory.
  for (const op of ['listaccts', 'usagestatistics'])
    await post(dataDir, berthServer.adminPort, `/api/v1/${op}/`);
  measurements.push({
    scenario: `5a. resident memory with ${SIZES.large.toLocaleString('en')} accounts after a full listaccts and usagestatistics`,
    metric: 'MB',
    berth: rssMb(berthServer.child.pid!),
    baseline: rssMb(bare.pid),
    higherIsBetter: false,
    target: { absolute: 200, text: 'under 200 MB' },
    errors: 0,
  });
  const quiet = await probe(dataDir, berthServer.adminPort, HEADERS);
  const [, other] = await Promise.all([
    cannon({ connections: 2, headers: HEADERS, url: url(berthServer.adminPort, 'listaccts') }),
    probe(dataDir, berthServer.adminPort, HEADERS),
  ]);
  measurements.push({
    scenario: `2b. another call while listaccts runs with ${SIZES.large.toLocaleString('en')} accounts`,
    metric: 'p99 latency of test_connection, ms',
    berth: other.p99,
    baseline: quiet.p99,
    higherIsBetter: false,
    target: { absolute: 100, text: 'p99 under 100 ms' },
    errors: other.failures,
  });
  bare.stop();
  await berthServer.stop();
}

/** The mail tables' part of a change as mail domains grow (no server: the writer alone). */
async function mailTables(): Promise<void> {
  const many = SMOKE ? 1_000 : 10_000;
  mailTableChange(100); // compiled before it is measured
  const baseline = mailTableChange(100);
  measurements.push({
    scenario: `8b. the mail tables' part of a createacct, at ${many.toLocaleString('en')} mail domains (baseline: at 100)`,
    metric: 'CPU ms a change, median',
    berth: mailTableChange(many),
    baseline,
    higherIsBetter: false,
    target: { text: 'reported: the target of 8 is for createacct whole' },
    errors: 0,
  });
}

async function createAccounts(): Promise<void> {
  const dataDir = await prepare(0);
  const berthServer = await startBerth(dataDir);
  const bare = await startBare(dataDir);
  let next = 0;
  const requests = [
    {
      method: 'POST' as const,
      headers: { ...HEADERS, ...FORM },
      setupRequest: (req: autocannon.Request) => {
        const user = `c${(next++).toString(36).padStart(6, '0')}`;
        return {
          ...req,
          body: `user=${user}&domain=${user}.example.com&email=o%40example.com&package=default&quota=100`,
        };
      },
    },
  ];
  const options = { connections: 20, amount: SIZES.create, requests };
  const started = performance.now();
  const [ours, during] = await Promise.all([
    cannon({ ...options, url: url(berthServer.adminPort, 'createacct') }).then((result) => ({
      result,
      seconds: (performance.now() - started) / 1000,
    })),
    probe(dataDir, berthServer.adminPort, HEADERS, SMOKE ? 1 : 8),
  ]);
  next = 0;
  const ceiling = await cannon({ ...options, url: url(bare.port, 'createacct') });
  const rate = ours.result.requests.total / ours.seconds;
  measurements.push({
    scenario: `3a. createacct, record driver, 20 clients, ${SIZES.create.toLocaleString('en')} accounts`,
    metric: 'accounts per second',
    berth: rate,
    baseline: ceiling.requests.total / ceiling.duration,
    higherIsBetter: true,
    target: { absolute: 300, text: '≥ 300 per second sustained' },
    errors: ours.result.non2xx + ours.result.errors,
  });
  const quiet = await probe(dataDir, berthServer.adminPort, HEADERS);
  measurements.push({
    scenario: '3b. test_connection while createacct runs',
    metric: 'p99 latency, ms',
    berth: during.p99,
    baseline: quiet.p99,
    higherIsBetter: false,
    target: { absolute: 50, text: 'p99 under 50 ms' },
    errors: during.failures,
  });
  bare.stop();
  await berthServer.stop();
}

async function failedLoginStorm(): Promise<void> {
  const dataDir = await prepare(0);
  const berthServer = await startBerth(dataDir);
  const caller = { ...HEADERS, 'x-forwarded-for': '203.0.113.1' };
  const quiet = await probe(dataDir, berthServer.adminPort, caller);
  // 200 connections from one attacking address: locked out after ten failures, then refused
  // before any password is hashed.
  const attacker = {
    'x-api-user': API_USER,
    'x-api-password': 'wrong-password',
    'x-forwarded-for': '198.51.100.7',
  };
  const [attack, during] = await Promise.all([
    cannon({ connections: 200, headers: attacker, url: url(berthServer.adminPort, 'test_connection') }),
    probe(dataDir, berthServer.adminPort, caller),
  ]);
  measurements.push({
    scenario: `4. failed-login storm, 200 connections (${Math.round(attack.requests.average).toLocaleString('en')} refusals per second)`,
    metric: "another caller's p99 latency, ms",
    berth: during.p99,
    baseline: quiet.p99,
    higherIsBetter: false,
    target: { absolute: 50, text: 'p99 under 50 ms' },
    errors: during.failures,
  });
  await berthServer.stop();
}

/** Starts berth sandbox; `onStack(op, body)` calls its API as its administrator. */
async function benchSandbox() {
  const sandbox = await startSandbox(tempDir());
  children.push(sandbox.child);
  const { info } = sandbox;
  const auth = { 'x-api-user': info.api_user, 'x-api-password': info.api_password };
  const port = Number(new URL(info.api).port);
  return {
    sandbox,
    /** An operation of the API (`path`, below /api/, for another than /api/v1/<op>/). */
    onStack: (op: string, body: string, path = `v1/${op}`) => postForm(port, `/api/${path}/`, body, auth),
  };
}

/** Milliseconds one createacct takes, one call at a time: `call` makes account number `i`. */
async function sequentialCreates(count: number, call: (i: number) => Promise<string>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const reply = JSON.parse(await call(i)) as { status: number; info: string };
    if (reply.status !== 200) throw new Error(`createacct: ${reply.info}`);
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b);
}

/**
 * createacct on the whole web stack (user, PHP-FPM pool, fallback certificate, nginx, BIND, each
 * reload waited for) in berth sandbox, against the same calls on the record driver.
 */
async function wholeStack(): Promise<void> {
  const count = SMOKE ? 3 : 30;
  const body = (i: number) =>
    `user=s${i}x&domain=s${i}x.example.com&email=o%40example.com&package=default&password=Stack-pass-${i}1234`;
  const dataDir = await prepare(0);
  const berthServer = await startBerth(dataDir);
  const onRecord = (op: string, body: string) => post(dataDir, berthServer.adminPort, `/api/${op}/`, body);
  const baseline = await sequentialCreates(count, (i) => onRecord('v1/createacct', body(i)));
  const baselineOps = await customerOperations(count, onRecord);
  await berthServer.stop();

  const { sandbox, onStack } = await benchSandbox();
  let stack: number[];
  let stackOps: Record<string, number[]>;
  try {
    stack = await sequentialCreates(count, (i) => onStack('createacct', body(i)));
    stackOps = await customerOperations(count, (op, body) => onStack(op.replace(/^v1\//, ''), body, op));
  } catch (error) {
    process.stderr.write(
      `the sandbox said:\n${sandbox.output()}\nberth's log in it:\n${await sandbox.log()}\n`,
    );
    throw error;
  } finally {
    await sandbox.stop();
  }
  measurements.push({
    scenario: `6a. createacct with the whole web stack (berth sandbox), one at a time, ${count} accounts`,
    metric: 'median latency, ms',
    berth: median(stack),
    baseline: median(baseline),
    higherIsBetter: false,
    target: { absolute: 150, text: '≤ 150 ms' },
    errors: 0,
  });
  measurements.push({
    scenario: '6b. the same, slowest call',
    metric: 'maximum latency, ms',
    berth: stack.at(-1)!,
    baseline: baseline.at(-1)!,
    higherIsBetter: false,
    target: { absolute: 400, text: '≤ 400 ms' },
    errors: 0,
  });
  const targets: Record<string, number> = { add_domain: 300, add_mailbox: 100, add_database: 100 };
  for (const [op, target] of Object.entries(targets))
    measurements.push({
      scenario: `6c. ${op} by the holder (through the API's account path), whole stack, one at a time, ${count} calls`,
      metric: 'median latency, ms',
      berth: median(stackOps[op]!),
      baseline: median(baselineOps[op]!),
      higherIsBetter: false,
      target: { absolute: target, text: `≤ ${target} ms` },
      errors: 0,
    });
}

/**
 * Milliseconds of the holder's add_domain, add_mailbox and add_database, one call at a time, one
 * of each for each of `count` accounts made by wholeStack (`call(path, body)`, path below /api/).
 */
async function customerOperations(
  count: number,
  call: (path: string, body: string) => Promise<string>,
): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = { add_domain: [], add_mailbox: [], add_database: [] };
  const params = (i: number): Record<string, string> => ({
    add_domain: `domain=shop${i}.example.net&type=addon`,
    add_mailbox: `email=info%40s${i}x.example.com&password=Mailbox-pass-${i}x9`,
    add_database: `name=shop${i}`,
  });
  for (let i = 0; i < count; i++)
    for (const [op, body] of Object.entries(params(i))) {
      const started = performance.now();
      const reply = JSON.parse(await call(`account/${op}`, `user=s${i}x&${body}`)) as {
        status: number;
        info: string;
      };
      if (reply.status !== 200) throw new Error(`${op}: ${reply.info}`);
      times[op]!.push(performance.now() - started);
    }
  for (const list of Object.values(times)) list.sort((a, b) => a - b);
  return times;
}

/**
 * The memory of a process and every process below it: the sum of their proportional set sizes
 * (shared pages divided among their users), in MB.
 */
function stackMemory(rootPid: number): number {
  let kb = 0;
  for (const pid of processTree(rootPid).keys()) {
    try {
      kb += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // gone meanwhile
    }
  }
  return kb / 1024;
}

/** Every process below `rootPid` and itself, each with its /proc stat line, read once. */
function processTree(rootPid: number): Map<number, string> {
  const children = new Map<number, number[]>();
  const stats = new Map<number, string>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
      stats.set(Number(name), stat);
    } catch {
      // gone meanwhile
    }
  }
  const tree = new Map<number, string>();
  const todo = [rootPid];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    todo.push(...(children.get(pid) ?? []));
    if (stats.has(pid)) tree.set(pid, stats.get(pid)!);
  }
  return tree;
}

/**
 * The CPU time, in ms, every process below `rootPid` has used, with what their ended children
 * used (a command's time is its parent's once it ended); nginx's left out (the steady load's TLS
 * handshakes, not the calls').
 */
function stackCpuMs(rootPid: number): Map<number, number> {
  const hz = 100;
  const used = new Map<number, number>();
  for (const [pid, stat] of processTree(rootPid)) {
    if (stat.includes('(nginx)')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
    used.set(pid, (ticks * 1000) / hz);
  }
  return used;
}

/**
 * Of Berth's own thread in the sandbox (the event loop of `berth serve`), in ms from the kernel's
 * schedstat: the time it ran on a core, and the time it was ready to run but waited for one. The
 * second is what the machine's other work (the steady load, its client in this process, the
 * commands) adds to a call that Berth's own work does not.
 */
function berthThreadTimes(rootPid: number): { running: number; waiting: number } {
  for (const pid of processTree(rootPid).keys()) {
    let command = '';
    try {
      command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!command.includes('berth.js\0serve\0')) continue;
    const [running, waiting] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8')
      .split(' ')
      .map(Number);
    return { running: running! / 1e6, waiting: waiting! / 1e6 };
  }
  throw new Error('no berth serve in the sandbox');
}

/** The CPU ms the stack used between two readings of stackCpuMs (a process new since: all of its). */
function cpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - Math.min(ms, before.get(pid) ?? 0);
  return total;
}

/** Calls `call(i)` for i below `count` from `clients` callers at once; each answer's milliseconds. */
async function parallel(
  count: number,
  clients: number,
  call: (i: number) => Promise<string>,
): Promise<{ seconds: number; latencies: number[]; failures: number }> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const started = performance.now();
  const client = async () => {
    while (next < count) {
      const i = next++;
      const sent = performance.now();
      try {
        const reply = JSON.parse(await call(i)) as { status: number; info: string };
        if (reply.status !== 200) {
          failures++;
          process.stderr.write(`bench: call ${i}: ${reply.info}\n`);
        }
      } catch (error) {
        failures++;
        process.stderr.write(`bench: call ${i}: ${(error as Error).message}\n`);
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: clients }, client));
  return {
    seconds: (performance.now() - started) / 1000,
    latencies: latencies.sort((a, b) => a - b),
    failures,
  };
}

const p99 = (sorted: number[]) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;

/**
 * What a billing system's bulk runs do to the whole stack (berth sandbox), 20 clients at once: a
 * migration's createacct, then a due date's suspendacct and the payments' unsuspendacct, with a
 * steady HTTPS load on another account's site; against the same calls on the record driver.
 */
async function bulkChanges(): Promise<void> {
  const clients = 20;
  const count = SMOKE ? 20 : 1000;
  const changed = SMOKE ? 10 : 500;
  // The server's sites when createacct is timed one at a time, and when the bursts of suspensions
  // run: a small server, a full one, and twice that.
  const [small, full, large] = SMOKE ? [10, 60, 100] : [100, 5000, 10_000];
  // A call's time moves with what shares the two cores (the steady load below, the keeper, the
  // sweeps) in phases of a second or more: 30 calls one at a time (about a second) took 27 to 56 ms
  // in one window, and their median moved by a third between runs. 100 calls span several phases.
  const probes = SMOKE ? 3 : 100;
  const unpooledCount = SMOKE ? 5 : 200;
  const users = (i: number) => `b${i.toString(36).padStart(4, '0')}`;
  const account = (user: string, i: number) =>
    `user=${user}&domain=${user}.example.com&email=o%40example.com&package=default&password=Bulk-pass-${i}x9`;
  const create = (i: number) => account(users(i), i);
  const change = (i: number) => `user=${users(i)}`;
  const OPS = ['suspendacct', 'unsuspendacct'] as const;

  const dataDir = await prepare(0);
  const recordServer = await startBerth(dataDir);
  const onRecord = (op: string, body: string) =>
    post(dataDir, recordServer.adminPort, `/api/v1/${op}/`, body);
  const recordCreates = await parallel(count, clients, (i) => onRecord('createacct', create(i)));
  const recordOne = await sequentialCreates(probes, (i) => onRecord('createacct', account(`p${i}`, i)));
  const recordChanges: Awaited<ReturnType<typeof parallel>>[] = [];
  for (const op of OPS) recordChanges.push(await parallel(changed, clients, (i) => onRecord(op, change(i))));
  await recordServer.stop();

  const { sandbox, onStack } = await benchSandbox();
  const { info } = sandbox;
  try {
    const steady = JSON.parse(
      await onStack('createacct', 'user=steady&domain=steady.example&email=o%40example.com&package=default'),
    ) as { status: number; info: string };
    if (steady.status !== 200) throw new Error(`createacct steady: ${steady.info}`);
    // A static page, and a PHP page that takes two seconds, as a slow application's would.
    const page = await sandbox.exec([
      '/usr/sbin/runuser',
      '-u',
      'steady',
      '--',
      '/bin/sh',
      '-c',
      'echo up > ~/public_html/index.html; echo "<?php sleep(2); echo \'done\';" > ~/public_html/slow.php',
    ]);
    if (page.code !== 0) throw new Error(`the steady site's page: ${page.stderr}`);
    // What a reload of nginx would cost, by the number of sites: one parse of the whole
    // configuration, as nginx -t makes it. No call reloads nginx; the parse shows that the
    // configuration stays the same size as sites come.
    const nginxTest = async () => {
      // The CPU time of a parse (user and system), not its wall time: one parse is ten or twenty
      // milliseconds, which the steady load beside it moves by as much. Ten parses a batch, the
      // median of five batches; run by quietParse, once nothing else is left to do.
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const test = await sandbox.exec([
          '/bin/bash',
          '-c',
          'TIMEFORMAT="%3U %3S"; time (for i in 1 2 3 4 5 6 7 8 9 10; do /usr/sbin/nginx -t -q || exit 1; done)',
        ]);
        if (test.code !== 0) throw new Error(`nginx -t: ${test.stderr}`);
        const [user, system] = test.stderr.trim().split('\n').at(-1)!.split(' ').map(Number);
        times.push((user! + system!) / 10);
      }
      return median(times.sort((a, b) => a - b));
    };
    const emptyMemory = stackMemory(info.namespace_pid);

    // Another account's site throughout: static requests, and two clients of its slow PHP page.
    const load = steadyLoad(info, 'steady.example');
    const slow = [1, 2].map(() => steadyLoad(info, 'steady.example', 200, '/slow.php'));
    // The sites the server has: the steady one, then every account made below.
    let sites = 1;
    let fillFailures = 0;
    /** Accounts made, 20 clients at once, untimed, until the server has `to` sites. */
    const fill = async (to: number) => {
      const from = sites;
      const made = await parallel(to - from, clients, (i) =>
        onStack('createacct', account(`f${from + i}`, i)),
      );
      fillFailures += made.failures;
      sites = to;
    };
    /** createacct timed one call at a time, `probes` accounts, at the sites the server has. */
    /** Of each window of oneAtATime, Berth's thread per call: ms on a core, and waiting for one. */
    const threadTimes = new Map<string, { running: number; waiting: number }>();
    const oneAtATime = async (tag: string) => {
      const before = berthThreadTimes(info.namespace_pid);
      const times = await sequentialCreates(probes, (i) => onStack('createacct', account(`${tag}${i}`, i)));
      const after = berthThreadTimes(info.namespace_pid);
      threadTimes.set(tag, {
        running: (after.running - before.running) / probes,
        waiting: (after.waiting - before.waiting) / probes,
      });
      sites += probes;
      return times;
    };
    /**
     * Waits until every site has its certificate from the ACME server (none on its fallback), as a
     * server that has had its sites a while: the keeper orders a new site's certificate after its
     * createacct answered, and a fill of thousands leaves thousands still to order, on the same
     * thread and cores as the calls timed next. How long that took is reported (9).
     */
    const settled: { sites: number; waiting: number; seconds: number; left: number }[] = [];
    const settle = async (reported = true) => {
      const pending = async () => {
        const listed = await sandbox.exec([
          '/bin/sh',
          '-c',
          `grep -LE '"state": *"valid"' ${CERT_DIR}/*/state.json | wc -l`,
        ]);
        if (listed.code !== 0) throw new Error(`the certificates' states: ${listed.stderr}`);
        return Number(listed.stdout.trim());
      };
      const started = performance.now();
      const waiting = await pending();
      let left = waiting;
      while (left > 0 && performance.now() - started < SETTLE_LIMIT_MS) {
        await new Promise((resolve) => setTimeout(resolve, 5_000));
        left = await pending();
      }
      if (reported) settled.push({ sites, waiting, seconds: (performance.now() - started) / 1000, left });
    };
    /**
     * Waits until the DKIM keys made ahead are all there again (`dkim_keys_ahead`, made in idle
     * time), as on a server that has been quiet a while: the fill and the calls just timed took
     * some. How long that took, and how many were missing, are reported (9′).
     */
    const keysMadeAhead = async () => {
      const ready = async () => {
        const listed = await sandbox.exec(['/bin/sh', '-c', `ls ${KEY_POOL_DIR} | grep -c '\\.pem$'`]);
        return Number(listed.stdout.trim());
      };
      // The smoke run waits for a few: a busy machine leaves the keys' thread little time.
      const wanted = SMOKE ? 20 : KEYS_AHEAD;
      const started = performance.now();
      const missing = Math.max(0, wanted - (await ready()));
      let left = missing;
      while (left > 0 && performance.now() - started < SETTLE_LIMIT_MS) {
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        left = Math.max(0, wanted - (await ready()));
      }
      return { missing, left, seconds: (performance.now() - started) / 1000 };
    };
    /**
     * One parse of nginx's configuration on a quiet server: every certificate ordered and the DKIM
     * keys made ahead all there, the steady load alone beside it. Right after createacct calls the
     * keeper orders their certificates and the pool makes their keys again, on the cores the parse
     * runs on: a parse taken then costs more CPU for the same configuration.
     */
    const quietParse = async () => {
      await settle(false);
      await keysMadeAhead();
      return nginxTest();
    };
    const nginxTestAlone = await quietParse();
    await fill(small);
    await settle();
    const atSmall = await oneAtATime('p');
    const keysWait = await keysMadeAhead();
    const createReloads = await sandboxReloads(info);
    const cpuBefore = stackCpuMs(info.namespace_pid);
    const creates = await parallel(count, clients, (i) => onStack('createacct', create(i)));
    const cpuPerAccount = cpuBetween(cpuBefore, stackCpuMs(info.namespace_pid)) / count;
    const createdReloads = await sandboxReloads(info);
    sites += count;
    // The same burst with every DKIM key made on the spot: the pool emptied first (a burst longer
    // than it, or a server just installed), and refilled only once the burst is over.
    const emptied = await sandbox.exec(['/bin/sh', '-c', `rm -f ${KEY_POOL_DIR}/*.pem`]);
    if (emptied.code !== 0) throw new Error(`emptying the key pool: ${emptied.stderr}`);
    const cpuBeforeUnpooled = stackCpuMs(info.namespace_pid);
    const unpooled = await parallel(unpooledCount, clients, (i) =>
      onStack('createacct', account(`k${i}`, i)),
    );
    const cpuUnpooled = cpuBetween(cpuBeforeUnpooled, stackCpuMs(info.namespace_pid)) / unpooledCount;
    sites += unpooledCount;
    // The accounts made so far, every one of them idle now.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const idleAccounts = sites - 1;
    const idleMemory = stackMemory(info.namespace_pid);
    await fill(full);
    await settle();
    const atFull = await oneAtATime('q');
    const bursts = [];
    for (const op of OPS) {
      const before = await sandboxReloads(info);
      const burst = await parallel(changed, clients, (i) => onStack(op, change(i)));
      const after = await sandboxReloads(info);
      bursts.push({ op, ...burst, reloads: (after.nginx ?? 0) - (before.nginx ?? 0) });
    }
    const burstSites = sites;
    await fill(large);
    await settle();
    const atLarge = await oneAtATime('r');
    const nginxTestFull = await quietParse();
    const seen = await load.stop();
    const seenSlow = await Promise.all(slow.map((s) => s.stop()));

    const n = count.toLocaleString('en');
    measurements.push({
      scenario: `7a. createacct, whole stack (berth sandbox), 20 clients, ${n} accounts`,
      metric: 'accounts per second',
      berth: count / creates.seconds,
      baseline: count / recordCreates.seconds,
      higherIsBetter: true,
      target: { absolute: 30, text: '≥ 30 per second (the record driver alongside)' },
      errors: creates.failures,
    });
    const cores = availableParallelism();
    measurements.push({
      scenario: `7a‴. the same right after it, ${unpooledCount} accounts more, with no DKIM key made ahead (the pool emptied first: each key made on the spot)`,
      metric: `accounts per second (baseline: ms of the stack's CPU per account)`,
      berth: unpooledCount / unpooled.seconds,
      baseline: cpuUnpooled,
      higherIsBetter: true,
      target: { text: 'reported: what 7a costs where its keys are not made ahead' },
      errors: unpooled.failures,
    });
    measurements.push({
      scenario: `9′. DKIM keys made ahead: the wait before 7a until the pool held its ${(SMOKE ? 20 : KEYS_AHEAD).toLocaleString('en')} again${keysWait.left > 0 ? ` (${keysWait.left} still missing at the limit)` : ''}`,
      metric: 'seconds (baseline: keys missing when the wait began)',
      berth: keysWait.seconds,
      baseline: keysWait.missing,
      higherIsBetter: false,
      target: { text: 'reported: 7a runs once it is done' },
      errors: keysWait.left,
    });
    measurements.push({
      scenario: `7a″. CPU time of the whole stack's processes per createacct during 7a (nginx's left out), and the rate ${cores} cores allow at that cost`,
      metric: 'ms of CPU per account (baseline: accounts a second the cores allow)',
      berth: cpuPerAccount,
      baseline: (cores * 1000) / cpuPerAccount,
      higherIsBetter: false,
      target: {
        absolute: (cores * 1000) / 30,
        text: `≤ ${Math.round((cores * 1000) / 30)} ms: what 30 a second needs on ${cores} cores`,
      },
      errors: 0,
    });
    const scale = [
      ['6d', small, atSmall, 'p'],
      ['6e', full, atFull, 'q'],
      ['6f', large, atLarge, 'r'],
    ] as const;
    for (const [label, at, times, tag] of scale) {
      const where = `${at.toLocaleString('en')} sites`;
      measurements.push({
        scenario: `${label}. createacct, whole stack, one at a time, ${probes} accounts, at ${where}`,
        metric: 'median latency, ms (baseline: the record driver)',
        berth: median(times),
        baseline: median(recordOne),
        higherIsBetter: false,
        target: { absolute: 150, text: '≤ 150 ms' },
        errors: 0,
      });
      measurements.push({
        scenario: `${label}′. the same, slowest call, at ${where}`,
        metric: 'maximum latency, ms (baseline: the record driver)',
        berth: times.at(-1)!,
        baseline: recordOne.at(-1)!,
        higherIsBetter: false,
        target: { absolute: 400, text: '≤ 400 ms' },
        errors: 0,
      });
      const thread = threadTimes.get(tag)!;
      measurements.push({
        scenario: `${label}″. Berth's own thread during ${label}, a call's share`,
        metric: 'ms ready to run, waiting for a core (baseline: ms running on one)',
        berth: thread.waiting,
        baseline: thread.running,
        higherIsBetter: false,
        target: { text: "reported: what the machine's other work adds to a call" },
        errors: 0,
      });
    }
    measurements.push({
      scenario: `8. cost of one change as sites grow: createacct's median at ${large.toLocaleString('en')} sites (6f) against ${small.toLocaleString('en')} (6d)`,
      metric: `median latency, ms (baseline: at ${small.toLocaleString('en')} sites)`,
      berth: median(atLarge),
      baseline: median(atSmall),
      higherIsBetter: false,
      target: { ratio: 1.2, text: 'at most 1.2× (the accounts filling the server between: errors)' },
      errors: fillFailures,
    });
    measurements.push({
      scenario: '7b. the same, p99 of a call',
      metric: 'p99 latency, ms',
      berth: p99(creates.latencies),
      baseline: p99(recordCreates.latencies),
      higherIsBetter: false,
      target: { absolute: 5000, text: 'under 5 s' },
      errors: creates.failures,
    });
    bursts.forEach((burst, i) => {
      const letter = ['c', 'd'][i]!;
      measurements.push({
        scenario: `7${letter}. ${burst.op}, whole stack, 20 clients, ${changed} accounts, at ${burstSites.toLocaleString('en')} sites`,
        metric: 'total seconds',
        berth: burst.seconds,
        baseline: recordChanges[i]!.seconds,
        higherIsBetter: false,
        target: { absolute: 10, text: '≤ 10 s' },
        errors: burst.failures,
      });
      measurements.push({
        scenario: `7${letter}′. nginx reloads for those ${changed} calls`,
        metric: 'reloads (baseline: calls)',
        berth: burst.reloads,
        baseline: changed,
        higherIsBetter: false,
        target: { absolute: 0, text: 'none: no call reloads nginx' },
        errors: 0,
      });
    });
    measurements.push({
      scenario: `7a′. nginx reloads for those ${n} calls`,
      metric: 'reloads (baseline: calls)',
      berth: (createdReloads.nginx ?? 0) - (createReloads.nginx ?? 0),
      baseline: count,
      higherIsBetter: false,
      target: { absolute: 0, text: 'none: no call reloads nginx' },
      errors: 0,
    });
    measurements.push({
      scenario:
        "7e. another account's static page over HTTPS, a new connection each, while the server fills (6d–6f, 7a, 7c, 7d and every account between)",
      metric: 'failed requests (baseline: requests)',
      berth: seen.errors.length,
      baseline: seen.requests,
      higherIsBetter: false,
      target: { absolute: 0, text: 'none fails' },
      errors: seen.errors.length,
    });
    measurements.push({
      scenario: '7e′. the same, p99 of a request (a full TLS handshake each)',
      metric: 'p99 latency, ms',
      berth: p99(seen.latencies),
      baseline: seen.latencies[0] ?? 0,
      higherIsBetter: false,
      target: { absolute: 50, text: 'p99 under 50 ms (baseline: the fastest)' },
      errors: 0,
    });
    const slowFailures = seenSlow.flatMap((s) => s.errors);
    measurements.push({
      scenario: "7g. another account's PHP requests of 2 s while the server fills (as 7e), two clients",
      metric: 'failed or cut requests (baseline: requests)',
      berth: slowFailures.length,
      baseline: seenSlow.reduce((sum, s) => sum + s.requests, 0),
      higherIsBetter: false,
      target: { absolute: 0, text: 'none fails, none is cut' },
      errors: slowFailures.length,
    });
    for (const { sites: at, waiting, seconds, left } of settled)
      measurements.push({
        scenario: `9. certificates still to order when the fill reached ${at.toLocaleString('en')} sites, until every site had its own${left > 0 ? ` (${left} still waiting at the limit)` : ''}`,
        metric: 'seconds (baseline: sites waiting when the fill ended)',
        berth: seconds,
        baseline: waiting,
        higherIsBetter: false,
        target: { text: 'reported: the timed calls above run once it is done' },
        errors: left,
      });
    measurements.push({
      scenario: `7h. memory of the whole stack (PSS of every process) with ${idleAccounts.toLocaleString('en')} idle accounts, above the empty server`,
      metric: 'MB (baseline: the empty server)',
      berth: idleMemory - emptyMemory,
      baseline: emptyMemory,
      higherIsBetter: false,
      target: { absolute: 1024, text: 'at most 1 GB' },
      errors: 0,
    });
    measurements.push({
      scenario: `7f. one parse of nginx's configuration (nginx -t) with ${sites.toLocaleString('en')} sites`,
      metric: 'seconds of CPU (baseline: one site)',
      berth: nginxTestFull,
      baseline: nginxTestAlone,
      higherIsBetter: false,
      target: { ratio: 1.2, text: 'at most 1.2× one site’s: the configuration names no site' },
      errors: 0,
    });
  } catch (error) {
    process.stderr.write(`berth's log in the sandbox:\n${await sandbox.log()}\n`);
    throw error;
  } finally {
    await sandbox.stop();
  }
}

// Stopped by hand: the servers and the sandbox stop too, and are waited for (the sandbox takes its
// services down, and reports on its output as it does).
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, async () => {
    const running = children.filter((child) => child.exitCode === null);
    const exited = running.map((child) => new Promise((resolve) => child.once('exit', resolve)));
    for (const child of running) child.kill('SIGTERM');
    await Promise.race([Promise.all(exited), new Promise((resolve) => setTimeout(resolve, 30_000))]);
    process.exit(130);
  });

try {
  for (const scenario of [
    testConnection,
    listAccounts,
    createAccounts,
    failedLoginStorm,
    largeStore,
    mailTables,
    wholeStack,
    bulkChanges,
  ]) {
    if (flags.only && !flags.only.split(',').includes(scenario.name)) continue;
    process.stdout.write(`bench: ${scenario.name}\n`);
    await scenario();
  }
  writeReport(OUT, measurements, { smoke: SMOKE, duration: DURATION });
  process.stdout.write(`bench: wrote ${OUT}\n`);
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
}
