// Runs the real `berth` command in child processes, as an administrator would from a shell.
import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as plainRequest } from 'node:http';
import { request } from 'node:https';
import { type Socket, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { SERVE_NODE_FLAGS } from '../src/config/serve-flags.ts';
import type { SandboxInfo } from '../src/sandbox/sandbox.ts';

export const BERTH = fileURLToPath(new URL('../bin/berth.js', import.meta.url));

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `berth ARGS` to completion, with `input` on standard input. */
export function berth(args: string[], input = ''): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BERTH, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

export interface Served {
  child: ChildProcess;
  adminPort: number;
  resellerPort: number;
  customerPort: number;
  portalPassword: string | null;
  /** Standard output and standard error, as they came. */
  output: () => string;
  /** Standard output alone. */
  stdout: () => string;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Starts `berth serve` on free ports and waits until both listeners answer. `through` starts it
 * another way than `node bin/berth.js`, e.g. `['npm', 'exec', '--yes', '--', 'berth']`.
 */
export function serve(
  dataDir: string,
  extra: string[] = [],
  env: Record<string, string> = {},
  through: string[] = [process.execPath, ...SERVE_NODE_FLAGS, BERTH],
): Promise<Served> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      through[0]!,
      [
        ...through.slice(1),
        'serve',
        '--data-dir',
        dataDir,
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--reseller-port',
        '0',
        '--customer-port',
        '0',
        ...extra,
      ],
      {
        cwd: join(import.meta.dirname, '..'),
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, BERTH_LOG_LEVEL: 'info', ...env },
        // Its own process group: SIGKILL takes the server with the commands it runs, as systemd
        // does with the unit's control group.
        detached: true,
      },
    );
    let out = '';
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    // A hang, never a slow start on two cores shared with whole sandboxes.
    const timer = setTimeout(() => reject(new Error(`berth serve did not start:\n${out}`)), 60_000);
    let stdout = '';
    let started = false;
    const onData = (chunk: Buffer) => {
      out += chunk;
      stdout += chunk;
      // Once started, later lines are only kept (its data directory may be gone by then).
      if (started) return;
      // Standard output is JSON lines: the "serving" line comes last, with both listeners.
      const lines = out
        .split('\n')
        .slice(0, -1)
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
      const serving = lines.find((line) => line.msg === 'serving');
      if (serving) {
        started = true;
        clearTimeout(timer);
        const passwordFile = lines.find(
          (line) => typeof line.file === 'string' && /portal password/.test(String(line.msg)),
        )?.file;
        resolve({
          child,
          adminPort: Number(new URL(String(serving.admin)).port),
          resellerPort: Number(new URL(String(serving.reseller)).port),
          customerPort: Number(new URL(String(serving.customer)).port),
          portalPassword: passwordFile ? readFileSync(String(passwordFile), 'utf8').trim() : null,
          output: () => out,
          stdout: () => stdout,
          stop: (signal = 'SIGTERM') => {
            if (signal === 'SIGKILL') process.kill(-child.pid!, signal);
            else child.kill(signal);
            return exited;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk) => {
      out += chunk;
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`berth serve exited with ${code}:\n${out}`));
    });
  });
}

export interface HttpsReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: () => Record<string, unknown>;
}

/** A POST over HTTPS that trusts the server's own self-signed certificate. */
export function post(
  dataDir: string,
  port: number,
  path: string,
  options: { headers?: Record<string, string>; body?: string | Buffer; tls?: boolean } = {},
): Promise<HttpsReply> {
  const ca = options.tls === false ? undefined : readFileSync(join(dataDir, 'tls', 'cert.pem'));
  const send = options.tls === false ? plainRequest : request;
  return new Promise((resolve, reject) => {
    const req = send(
      {
        host: 'localhost',
        port,
        path,
        method: 'POST',
        headers: options.headers,
        ca,
        servername: 'localhost',
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) }),
        );
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

export interface RunningSandbox {
  child: ChildProcess;
  /** The JSON file's fields (CONTRACT §13). */
  info: SandboxInfo;
  /** Everything it printed so far. */
  output: () => string;
  /** Runs a command inside it (`berth sandbox exec`). */
  exec(args: string[]): Promise<CommandResult>;
  /** Runs a shell script inside it as an account's user would (`runuser`), from its own shell. */
  asUser(user: string, script: string): Promise<CommandResult>;
  /** Berth's log inside it, for a failure's report. */
  log(): Promise<string>;
  /** SIGTERM, then its exit status. */
  stop(): Promise<number | null>;
}

/** Starts `berth sandbox` (with `args`: `--node`, `--database`) and waits for its ready line. */
export function startSandbox(dataDir: string, args: string[] = []): Promise<RunningSandbox> {
  const child = spawn(process.execPath, [BERTH, 'sandbox', '--data-dir', dataDir, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const ended = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const ready = /^sandbox ready: (.+)$/m.exec(output);
      if (!ready) return;
      const exec = (args: string[]) => berth(['sandbox', 'exec', '--data-dir', dataDir, '--', ...args]);
      resolve({
        child,
        info: JSON.parse(readFileSync(ready[1]!, 'utf8')) as SandboxInfo,
        output: () => output,
        exec,
        asUser: (user, script) => exec(['/usr/sbin/runuser', '-u', user, '--', '/bin/sh', '-c', script]),
        log: async () => (await exec(['/usr/bin/tail', '-n', '30', '/var/log/sandbox/berth.log'])).stdout,
        stop: () => {
          child.kill('SIGTERM');
          return ended;
        },
      });
    });
    void ended.then((code) =>
      reject(new Error(`berth sandbox ended (${code}) before it was ready:\n${output}`)),
    );
  });
}

/**
 * curl, as someone trying a site or a mail server would: whether curl succeeded, the status (HTTP
 * code, or SMTP's last reply code; 0 when curl itself failed) and the body.
 */
export function curl(args: string[]): { ok: boolean; status: number; body: string } {
  try {
    const out = execFileSync('/usr/bin/curl', ['-sS', '--max-time', '60', '-w', '\n%{http_code}', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const at = out.lastIndexOf('\n');
    return { ok: true, status: Number(out.slice(at + 1)), body: out.slice(0, at) };
  } catch {
    return { ok: false, status: 0, body: '' };
  }
}

/** curl over SMTP or IMAP with STARTTLS to a sandbox, verifying its mail certificate. */
export function mailCurl(sandbox: SandboxInfo, port: number, args: string[]) {
  return curl([
    '--resolve',
    `sandbox.test:${port}:127.0.0.1`,
    '--ssl-reqd',
    '--cacert',
    sandbox.fallback_ca,
    ...args,
  ]);
}

/** The message with this UID in a login's INBOX (IMAP over TLS, `login:password`), or '' when none. */
export function inboxMessage(sandbox: SandboxInfo, login: string, uid: number): string {
  return mailCurl(sandbox, sandbox.imap_port, [
    `imap://sandbox.test:${sandbox.imap_port}/INBOX;UID=${uid}`,
    '-u',
    login,
  ]).body;
}

/** The message with this UID in a login's INBOX once it has arrived (within a minute). */
export async function arrivedMessage(sandbox: SandboxInfo, login: string, uid: number): Promise<string> {
  for (let i = 0; i < 300; i++) {
    const body = inboxMessage(sandbox, login, uid);
    if (body !== '') return body;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no message ${uid} for ${login}`);
}

/** A sandbox with shell accounts of the default package, each `<user>.example`, password `<User>-pass-1234`. */
export async function sandboxWithAccounts(
  dataDir: string,
  users: readonly string[],
): Promise<RunningSandbox> {
  const running = await startSandbox(dataDir);
  for (const user of users) {
    const made = await sandboxCall(running.info, 'createacct', {
      user,
      domain: `${user}.example`,
      email: `${user}@example.org`,
      package: 'default',
      password: `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`,
      shell: '1',
    });
    if (made.status !== 200) throw new Error(`createacct ${user}: ${made.info}`);
  }
  return running;
}

/**
 * The SysV IPC objects (`shm 3`, `msg 0`, `sem 1`) in the sandbox's own IPC namespace that a uid
 * owns or made, read from /proc/sysvipc as root there.
 */
export async function ipcObjectsOf(running: RunningSandbox, uid: number): Promise<string[]> {
  const found: string[] = [];
  for (const kind of ['shm', 'msg', 'sem']) {
    const { stdout } = await running.exec(['/usr/bin/cat', `/proc/sysvipc/${kind}`]);
    const [header = '', ...rows] = stdout.trim().split('\n');
    const columns = header.trim().split(/\s+/);
    for (const row of rows) {
      const fields = row.trim().split(/\s+/);
      const owners = [fields[columns.indexOf('uid')], fields[columns.indexOf('cuid')]];
      if (owners.includes(String(uid))) found.push(`${kind} ${fields[1]}`);
    }
  }
  return found;
}

/**
 * A request over HTTPS to `127.0.0.1:port` without checking the certificate (the sandbox's API has
 * its own; a site may still have its fallback one), named `servername` for TLS and Host.
 */
export function insecureRequest(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; servername?: string } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { ...(options.servername && { host: options.servername }), ...options.headers },
        ...(options.servername && { servername: options.servername }),
        rejectUnauthorized: false,
        // A connection each: an idle kept-alive one that a reloading nginx closes is a race every
        // client meets (browsers send again), not a request the reload cut.
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * A call of the customer API of a sandbox (CONTRACT §14), as an account's holder: with its user
 * name and password (HTTP Basic) or an API token (Bearer). The answer's status and envelope.
 */
export async function sandboxHolderCall(
  sandbox: SandboxInfo,
  credentials: { user: string; password: string } | { token: string },
  operation: string,
  params: Record<string, string> = {},
): Promise<{ status: number; body: { data: unknown; info: string } }> {
  const authorization =
    'token' in credentials
      ? `Bearer ${credentials.token}`
      : `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
  const reply = await insecureRequest(Number(new URL(sandbox.customer_api).port), `/api/${operation}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
    body: new URLSearchParams(params).toString(),
  });
  return { status: reply.status, body: JSON.parse(reply.body) as { data: unknown; info: string } };
}

/** An API call to a sandbox, as its administrator; the answer's status and envelope. */
export async function sandboxCall(
  sandbox: SandboxInfo,
  operation: string,
  params: Record<string, string>,
): Promise<{ status: number; info: string }> {
  const reply = await insecureRequest(Number(new URL(sandbox.api).port), `/api/v1/${operation}/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-api-user': sandbox.api_user,
      'x-api-password': sandbox.api_password,
    },
    body: new URLSearchParams(params).toString(),
  }).catch((error: Error) => {
    throw new Error(`${operation} ${JSON.stringify(params.user ?? '')}: ${error.message}`, { cause: error });
  });
  const { info } = JSON.parse(reply.body) as { info: string };
  return { status: reply.status, info };
}

/** How many times the sandbox's Berth has reloaded each service (berth_service_reloads_total). */
export async function sandboxReloads(sandbox: SandboxInfo): Promise<Record<string, number>> {
  const { body } = await insecureRequest(Number(new URL(sandbox.api).port), '/metrics', {
    headers: { 'x-api-user': sandbox.api_user, 'x-api-password': sandbox.api_password },
  });
  const counts: Record<string, number> = {};
  for (const [, service, value] of body.matchAll(
    /^berth_service_reloads_total\{service="([^"]+)"\} (\d+)$/gm,
  ))
    counts[service!] = Number(value);
  return counts;
}

/**
 * GETs a sandbox site's page (`path`) over HTTPS, one request after another on a new connection
 * each (a full TLS handshake), until `stop()`: the answers that were not `expect` (or failed, or
 * were cut) are the errors; each answer's milliseconds are kept.
 */
export function steadyLoad(sandbox: SandboxInfo, domain: string, expect = 200, path = '/') {
  let stopped = false;
  let requests = 0;
  const errors: string[] = [];
  const latencies: number[] = [];
  const running = (async () => {
    while (!stopped) {
      requests++;
      const sent = performance.now();
      try {
        const { status } = await insecureRequest(sandbox.https_port, path, { servername: domain });
        if (status !== expect) errors.push(`HTTP ${status}`);
      } catch (error) {
        errors.push((error as Error).message);
      }
      latencies.push(performance.now() - sent);
    }
  })();
  let result: Promise<{ requests: number; errors: string[]; latencies: number[] }> | null = null;
  return {
    /** Ends the load (again: the same answer). */
    stop() {
      stopped = true;
      result ??= running.then(() => ({ requests, errors, latencies: latencies.sort((a, b) => a - b) }));
      return result;
    },
  };
}

/** The replies of one SMTP conversation, stage by stage; a stage not reached is absent. */
export interface SmtpReplies {
  mail?: string;
  rcpt?: string[];
  /** The reply to the message's end (the final dot): whether it was accepted. */
  data?: string;
}

/**
 * One message sent over SMTP as a mail client (or a forger) would, to a sandbox's port: from
 * `localAddress` (another loopback address stands for another host), with STARTTLS and AUTH PLAIN
 * when a login is given. Stops at the first refusal and answers every reply line it got.
 */
export async function smtpSend(
  sandbox: SandboxInfo,
  options: {
    port: number;
    localAddress?: string;
    login?: string;
    password?: string;
    from: string;
    to: string[];
    message: string;
    /** Run once the session is open (after AUTH when logging in), before MAIL FROM. */
    whileOpen?: () => Promise<void>;
  },
): Promise<SmtpReplies> {
  let socket: Socket = tcpConnect({
    host: '127.0.0.1',
    port: options.port,
    localAddress: options.localAddress,
  });
  let buffered = '';
  let waiting: (() => void) | null = null;
  const listen = (stream: Socket) => {
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buffered += chunk;
      waiting?.();
    });
    stream.on('error', () => waiting?.());
  };
  listen(socket);
  /** The next whole reply (its lines joined), once its last line (`NNN text`) has come. */
  const reply = async (): Promise<string> => {
    for (;;) {
      const lines = buffered.split('\r\n');
      const last = lines.findIndex((line) => /^\d{3}( |$)/.test(line));
      if (last !== -1) {
        buffered = lines.slice(last + 1).join('\r\n');
        return lines.slice(0, last + 1).join('\n');
      }
      if (socket.destroyed) throw new Error(`the connection closed: ${buffered}`);
      await new Promise<void>((resolve) => {
        waiting = resolve;
        setTimeout(resolve, 200);
      });
    }
  };
  const say = async (line: string) => {
    socket.write(`${line}\r\n`);
    return reply();
  };
  const ok = (text: string) => /^[23]/.test(text);
  const result: SmtpReplies = {};
  try {
    await reply();
    await say('EHLO client.test');
    if (options.login) {
      if (!ok(await say('STARTTLS'))) throw new Error('no STARTTLS');
      const plain = socket;
      plain.removeAllListeners('data');
      socket = tlsConnect({
        socket: plain,
        servername: 'sandbox.test',
        ca: readFileSync(sandbox.fallback_ca),
      });
      await new Promise<void>((resolve, reject) =>
        socket.once('secureConnect', resolve).once('error', reject),
      );
      listen(socket);
      await say('EHLO client.test');
      const auth = Buffer.from(`\0${options.login}\0${options.password}`).toString('base64');
      const authenticated = await say(`AUTH PLAIN ${auth}`);
      if (!ok(authenticated)) throw new Error(`AUTH refused: ${authenticated}`);
    }
    await options.whileOpen?.();
    result.mail = await say(`MAIL FROM:<${options.from}>`);
    if (!ok(result.mail)) return result;
    result.rcpt = [];
    for (const to of options.to) result.rcpt.push(await say(`RCPT TO:<${to}>`));
    if (!result.rcpt.some(ok)) return result;
    if (!ok(await say('DATA'))) return result;
    const body = options.message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    result.data = await say(`${body}${body.endsWith('\r\n') ? '' : '\r\n'}.`);
    return result;
  } finally {
    socket.end('QUIT\r\n');
  }
}

/**
 * ssh (or sftp) into a sandbox with a password, as a person would type it (through SSH_ASKPASS,
 * never on a command line); `args` is the remote command, `input` what is typed.
 */
export function sandboxSsh(
  sandbox: SandboxInfo,
  program: 'ssh' | 'sftp',
  user: string,
  password: string,
  args: string[],
  input = '',
  timeoutMs = 20_000,
): { code: number | null; stdout: string; stderr: string } {
  const { command, argv, env } = sshInvocation(sandbox, program, user, password, args);
  const result = spawnSync(command, argv, { input, encoding: 'utf8', timeout: timeoutMs, env });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** An ssh session into a sandbox that stays open while `args` (the remote command) runs. */
export function sandboxSshSession(sandbox: SandboxInfo, user: string, password: string, args: string[]) {
  const { command, argv, env } = sshInvocation(sandbox, 'ssh', user, password, args);
  return spawn(command, argv, { env, stdio: 'ignore' });
}

/** The askpass script this test process wrote, removed as it ends. */
function removeAskpass() {
  rmSync(join(tmpdir(), `berth-askpass-${process.pid}.sh`), { force: true });
}

function sshInvocation(
  sandbox: SandboxInfo,
  program: 'ssh' | 'sftp',
  user: string,
  password: string,
  args: string[],
) {
  const askpass = join(tmpdir(), `berth-askpass-${process.pid}.sh`);
  writeFileSync(askpass, '#!/bin/sh\nprintf "%s\\n" "$BERTH_TEST_PASSWORD"\n', { mode: 0o700 });
  if (!process.listeners('exit').includes(removeAskpass)) process.on('exit', removeAskpass);
  const options = [
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'PreferredAuthentications=password',
    '-o',
    'NumberOfPasswordPrompts=1',
  ];
  const port = program === 'ssh' ? ['-p', String(sandbox.ssh_port)] : ['-P', String(sandbox.ssh_port)];
  return {
    command: `/usr/bin/${program}`,
    argv: [...port, ...options, `${user}@127.0.0.1`, ...args],
    env: {
      ...process.env,
      SSH_ASKPASS: askpass,
      SSH_ASKPASS_REQUIRE: 'force',
      BERTH_TEST_PASSWORD: password,
    },
  };
}
