// The sandbox's ports: one on 127.0.0.1 for each of its services, chosen free at start-up, and the
// check that a service answers on its port.
import { randomInt } from 'node:crypto';
import { connect, createServer } from 'node:net';

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
 * A port no one listens on, below the kernel's range for ephemeral ports (32768 and up): a port from
 * that range could be taken by any outgoing connection between this choice and the service's bind.
 */
async function freePort(): Promise<number> {
  for (;;) {
    const port = 10_000 + randomInt(20_000);
    if (chosenPorts.has(port)) continue;
    const server = createServer();
    const free = await new Promise<boolean>((resolve) => {
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => resolve(true));
    });
    if (!free) continue;
    await new Promise((resolve) => server.close(resolve));
    chosenPorts.add(port);
    return port;
  }
}

/** The first of `count` free ports in a row, none of them chosen before. */
async function freePorts(count: number): Promise<number> {
  for (;;) {
    const first = await freePort();
    const rest: number[] = [];
    for (let port = first + 1; port < first + count; port++) {
      if (chosenPorts.has(port) || !(await isFree(port))) break;
      rest.push(port);
    }
    if (rest.length === count - 1) {
      for (const port of rest) chosenPorts.add(port);
      return first;
    }
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
