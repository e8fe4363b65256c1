// Connection slots: no client may hold one without using it, and no one address may hold them all.
// - Every connection must have finished its TLS handshake and its first request's headers within
//   the header timeout, counted from the moment it was accepted, whatever stage it stalls at
//   (a client that never starts TLS included); otherwise it is closed.
// - One source address holds at most `maxConnectionsPerAddress` connections at once; trusted
//   proxies, which speak for many clients, are exempt.
import type { Server, Socket } from 'node:net';
import { addressList, canonicalAddress, onList } from '../auth/access.ts';

export interface ConnectionGuard {
  headerTimeoutMs: number;
  maxConnectionsPerAddress: number;
  /** Addresses and CIDR ranges of trusted proxies. */
  exempt: readonly string[];
}

/** A TCP connection and the TLS socket over it report the same peer: the key that links them. */
const peerKey = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;

export function guardConnections(server: Server, guard: ConnectionGuard): void {
  const exempt = addressList(guard.exempt);
  const perAddress = new Map<string, number>();
  const awaitingHeaders = new Map<string, NodeJS.Timeout>();

  server.on('connection', (socket: Socket) => {
    const address = canonicalAddress(socket.remoteAddress ?? '');
    const isExempt = onList(exempt, address);
    const held = perAddress.get(address) ?? 0;
    if (!isExempt && held >= guard.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, held + 1);
    const key = peerKey(socket);
    const timer = setTimeout(() => socket.destroy(), guard.headerTimeoutMs);
    timer.unref();
    awaitingHeaders.set(key, timer);
    socket.once('close', () => {
      clearTimeout(timer);
      awaitingHeaders.delete(key);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });

  // A request has arrived with all its headers: the connection has earned its slot. Later
  // requests on it are held to the header and keep-alive timeouts by Node itself.
  server.on('request', (request: { socket: Socket }) => {
    const key = peerKey(request.socket);
    const timer = awaitingHeaders.get(key);
    if (timer === undefined) return;
    clearTimeout(timer);
    awaitingHeaders.delete(key);
  });
}
