// The sandbox's ports: one on 127.0.0.1 for each of its services, chosen free at start-up, and the
// check that a service answers on its port.
import { randomInt } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Ports {
  api: number;
  reseller: number;
  customer: number;
  http: number;
  https: number;
  dns: number;
  rndc: number;
  acme: number;
  acmeManagement: number;
  smtp: number;
  submission: number;
  imap: number;
  ssh: number;
  /** Postfix's smtpd for the mailing lists' outgoing mail (the lists component). */
  lists: number;
  ftp: number;
  /** The first of FTP_PASSIVE_PORTS free ports in a row, for FTP's passive data connections. */
  ftpPassive: number;
  webmail: number;
}

/** The file in the sandbox's directory that has its ports (chosen outside, read inside). */
export const PORTS_FILE = 'ports.json';

/** How many passive data ports the sandbox's FTP has: each open transfer takes one. */
export const FTP_PASSIVE_PORTS = 10;

/** A free port for each service, none of them chosen before. */
export async function choosePorts(): Promise<Ports> {
  return {
    api: await freePort(),
    reseller: await freePort(),
    customer: await freePort(),
    http: await freePort(),
    https: await freePort(),
    dns: await freePort(),
    rndc: await freePort(),
    acme: await freePort(),
    acmeManagement: await freePort(),
    smtp: await freePort(),
    submission: await freePort(),
    imap: await freePort(),
    ssh: await freePort(),
    lists: await freePort(),
    ftp: await freePort(),
    ftpPassive: await freePorts(FTP_PASSIVE_PORTS),
    webmail: await freePort(),
  };
}

const chosenPorts = new Set<number>();

/**
 * Where each port a sandbox on this machine chose is noted (a file named by the port, holding the
 * choosing process's pid), so that sandboxes started at the same time never choose the same one:
 * a port is free only until its service binds it, seconds later.
 */
const NOTED = join(tmpdir(), 'berth-sandbox-ports');

/** The ports this process noted: their notes go when it ends. */
const noted = new Set<number>();

/**
 * Notes the port as this process's; false when a live process noted it first. A note whose process
 * is gone (a sandbox killed) is taken over: moved aside first, so that of two processes taking it
 * over at once one alone does, and one that finds a live note there after all puts it back.
 */
export function note(port: number): boolean {
  const file = join(NOTED, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx', mode: 0o600 });
      if (noted.size === 0) process.once('exit', forgetNotes);
      noted.add(port);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const owner = readIfThere(file);
    if (owner === null) continue;
    if (alive(Number(owner))) return false;
    const aside = `${file}.${process.pid}`;
    try {
      renameSync(file, aside);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw error;
    }
    if (readFileSync(aside, 'utf8') !== owner) {
      renameSync(aside, file);
      return false;
    }
    rmSync(aside, { force: true });
  }
  return false;
}

/** A note's text, or null when it is gone (its process ended meanwhile). */
function readIfThere(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

function forgetNotes(): void {
  for (const port of noted) rmSync(join(NOTED, String(port)), { force: true });
}

function alive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether this process may note ports: the directory is its user's own (never another's, planted). */
function canNote(): boolean {
  mkdirSync(NOTED, { recursive: true, mode: 0o700 });
  const stat = lstatSync(NOTED);
  return stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o077) === 0;
}

/** Whether ports are noted (known once the first is claimed). */
let noting: boolean | undefined;

/** Claims a port: not chosen before here nor by another sandbox, and free now. */
async function claim(port: number): Promise<boolean> {
  if (chosenPorts.has(port) || !(await isFree(port))) return false;
  noting ??= canNote();
  if (noting && !note(port)) return false;
  chosenPorts.add(port);
  return true;
}

/**
 * A port no one listens on, below the kernel's range for ephemeral ports (32768 and up): a port from
 * that range could be taken by any outgoing connection between this choice and the service's bind.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + randomInt(20_000);
    if (await claim(port)) return port;
  }
}

/** The first of `count` free ports in a row, none of them chosen before. */
async function freePorts(count: number): Promise<number> {
  for (;;) {
    const first = await freePort();
    let port = first + 1;
    while (port < first + count && (await claim(port))) port++;
    if (port === first + count) return first;
  }
}

async function isFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
}

/** Whether something accepts connections on that port of 127.0.0.1. */
export async function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
