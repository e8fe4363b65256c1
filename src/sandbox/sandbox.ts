// `berth sandbox`: a whole hosting server on this machine that leaves no trace (CONTRACT §13). This
// process starts inside.ts in a new mount, PID and IPC namespace (util-linux `unshare`), passes its
// ready report on as `<data-dir>/sandbox/sandbox.json`, and stops it on SIGINT or SIGTERM. The PID
// namespace makes the end certain: when the sandbox's first process ends, the kernel ends every
// process left in it, and the overlays, and the SysV IPC objects its accounts made, go with the
// namespaces.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { phpVersion } from '../config/linux.ts';
import { childrenOf } from '../provision/linux/wait.ts';
import type { SandboxFleet } from './configure.ts';
import { detachHomes, makeHomesImage } from './homes.ts';
import { choosePorts, PORTS_FILE } from './ports.ts';

export const BIN = fileURLToPath(new URL('../../bin/berth.js', import.meta.url));

/** What the sandbox needs from Debian's packages (scripts/setup-system.sh installs them). */
const TOOLS = [
  '/usr/bin/unshare',
  '/usr/bin/nsenter',
  '/usr/bin/tini',
  '/usr/sbin/nginx',
  // Webmail: Debian's Roundcube.
  '/var/lib/roundcube/public_html/index.php',
  '/usr/sbin/named',
  '/usr/bin/pebble',
  '/usr/sbin/postfix',
  '/usr/sbin/dovecot',
  '/usr/sbin/opendkim',
  '/usr/sbin/sshd',
  '/usr/sbin/jk_init',
  '/usr/sbin/losetup',
  '/usr/sbin/mkfs.btrfs',
  '/usr/bin/btrfs',
];

export class SandboxError extends Error {
  override name = 'SandboxError';
}

export const sandboxDir = (dataDir: string) => join(dataDir, 'sandbox');
export const sandboxFile = (dataDir: string) => join(sandboxDir(dataDir), 'sandbox.json');

/** The JSON file's fields (CONTRACT §13), with the sandbox's namespace for `sandbox exec`. */
export interface SandboxInfo {
  api: string;
  reseller_api: string;
  /** The customer listener: the account holders' panel at / and their API at /api/<op>/. */
  customer_api: string;
  api_user: string;
  api_password: string;
  portal_password: string;
  http_port: number;
  https_port: number;
  dns_port: number;
  ssh_port: number;
  smtp_port: number;
  submission_port: number;
  imap_port: number;
  /** Pure-FTPd (explicit TLS required, with the fallback CA's certificate for sandbox.test). */
  ftp_port: number;
  /** Webmail (Roundcube): a mailbox logs in with its address and password. */
  webmail_url: string;
  acme_root_ca: string;
  /** The fallback CA: it signs a site's certificate until its ACME one arrives, and mail's (IMAP, submission). */
  fallback_ca: string;
  /** The process to signal (SIGINT or SIGTERM) to stop the sandbox. */
  pid: number;
  /** A process inside the sandbox's namespaces (what `sandbox exec` enters). */
  namespace_pid: number;
}

function check(): void {
  if (process.getuid?.() !== 0)
    throw new SandboxError('the sandbox needs root: it mounts overlays and runs the hosting services');
  const missing = TOOLS.filter((tool) => !existsSync(tool));
  if (!existsSync(`/usr/sbin/php-fpm${phpVersion()}`)) missing.push('php-fpm');
  if (missing.length > 0)
    throw new SandboxError(`missing ${missing.join(', ')}: run scripts/setup-system.sh as root`);
}

/** Runs the sandbox until SIGINT or SIGTERM; returns the exit status. */
export async function runSandbox(
  dataDir: string,
  out: (line: string) => void,
  fleet: SandboxFleet = {},
): Promise<number> {
  check();
  const dir = sandboxDir(dataDir);
  rmSync(dir, { recursive: true, force: true });
  // The sandbox's accounts see this machine's files beside their overlays: what this directory
  // holds (the passwords, the layers) is root's alone.
  mkdirSync(join(dir, 'layers'), { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  makeHomesImage(dir);
  // Chosen here, outside the namespaces, where every sandbox of the machine notes its ports in the
  // same place and a note's process can be told alive (ports.ts); read inside (inside.ts).
  writeFileSync(join(dir, PORTS_FILE), JSON.stringify(await choosePorts()), { mode: 0o600 });
  const child = spawn(
    '/usr/bin/unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '--pid',
      '--ipc',
      '--fork',
      '--kill-child',
      '--mount-proc',
      '--',
      // The namespace's first process reaps every orphan (a finished SSH session's process, say),
      // as init does on a real server; a zombie left as the account's would stop userdel.
      '/usr/bin/tini',
      '--',
      process.execPath,
      BIN,
      'sandbox-inside',
      dir,
      ...(fleet.node ? ['--node', fleet.node] : []),
      ...(fleet.database ? ['--database', fleet.database] : []),
    ],
    // The pipe on standard input is the sandbox's lifeline: when this process ends, however it
    // ends, the sandbox sees its input close and stops.
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  let stopping = false;
  const stop = () => {
    stopping = true;
    // unshare's forked child, tini, passes the signal on to the sandbox's first process.
    const inner = child.pid ? childrenOf(child.pid)[0] : undefined;
    if (inner) process.kill(inner, 'SIGTERM');
    else child.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (line) => {
    let message: {
      ready?: Omit<SandboxInfo, 'pid' | 'namespace_pid' | 'acme_root_ca' | 'fallback_ca'> & {
        acme_root_pem: string;
        fallback_ca_pem: string;
      };
    };
    try {
      message = JSON.parse(line);
    } catch {
      out(line);
      return;
    }
    if (!message.ready) return out(line);
    const { acme_root_pem, fallback_ca_pem, ...ready } = message.ready;
    const acmeRoot = join(dir, 'acme-root.pem');
    const fallbackCa = join(dir, 'fallback-ca.pem');
    writeFileSync(acmeRoot, acme_root_pem, { mode: 0o600 });
    writeFileSync(fallbackCa, fallback_ca_pem, { mode: 0o600 });
    const info: SandboxInfo = {
      ...ready,
      acme_root_ca: acmeRoot,
      fallback_ca: fallbackCa,
      pid: process.pid,
      namespace_pid: childrenOf(child.pid!)[0] ?? 0,
    };
    // The file holds passwords: only root reads it.
    writeFileSync(sandboxFile(dataDir), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
    out(`sandbox ready: ${sandboxFile(dataDir)}`);
  });
  const status = await new Promise<number>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  detachHomes(dir);
  rmSync(dir, { recursive: true, force: true });
  // Stopped when asked, it exits as the sandbox did; ending by itself is always a failure.
  return stopping ? status : status || 1;
}

/** Runs a command inside the running sandbox; returns its exit status. */
export async function sandboxExec(dataDir: string, argv: readonly string[]): Promise<number> {
  if (argv.length === 0) throw new SandboxError('give the command after --');
  let info: SandboxInfo;
  try {
    info = JSON.parse(readFileSync(sandboxFile(dataDir), 'utf8')) as SandboxInfo;
  } catch {
    throw new SandboxError(`no sandbox is running on ${dataDir} (no ${sandboxFile(dataDir)})`);
  }
  const child = spawn(
    '/usr/bin/nsenter',
    [
      '--target',
      String(info.namespace_pid),
      '--mount',
      '--pid',
      '--ipc',
      `--wd=${process.cwd()}`,
      '--',
      ...argv,
    ],
    { stdio: 'inherit' },
  );
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
}
