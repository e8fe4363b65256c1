// Connection slots: no client may hold one without using it, and no one address may hold them all.
// - Every connection must have finished its TLS handshake and its first request's headers within
//   the header timeout, counted from the moment it was accepted, whatever stage it stalls at
//   (a client that never starts TLS included); otherwise it is closed.
// - One source address (or, where `networkOf` says so, one network) holds at most
//   `maxConnectionsPerAddress` connections at once; trusted proxies, which speak for many clients,
//   are exempt.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import { addressList, canonicalAddress, onList } from '../auth/access.ts';

export interface ConnectionGuard {
  headerTimeoutMs: number;
  maxConnectionsPerAddress: number;
  /** Addresses and CIDR ranges of trusted proxies. */
  exempt: readonly string[];
  /** What connections are counted by: the address itself unless this names its network. */
  networkOf?: (address: string) => string;
}

/** A TCP connection and the TLS socket over it report the same peer: the key that links them. */
const peerKey = (socket: Socket) => `${socket.remoteAddress}|${socket.remotePort}`;

/** The timer that closes a connection whose first request has not arrived, on the request's socket. */
const headerTimer = Symbol('berth.headerTimer');
type Watched = Socket & { [headerTimer]?: NodeJS.Timeout | undefined };

/**
 * Guards `server`'s connections; requests reach `handler` through the listener returned, which
 * lets a connection keep its slot once its first request has arrived with all its headers.
 */
export function guardConnections(
  server: Server,
  guard: ConnectionGuard,
  handler: RequestListener,
): RequestListener {
  const exempt = addressList(guard.exempt);
  const perAddress = new Map<string, number>();
  // TLS only: the TCP connection's timer until the TLS socket over it takes it.
  const handshaking = new Map<string, NodeJS.Timeout>();

  server.on('connection', (socket: Watched) => {
    const peer = canonicalAddress(socket.remoteAddress ?? '');
    const isExempt = onList(exempt, peer);
    const address = guard.networkOf?.(peer) ?? peer;
    const held = perAddress.get(address) ?? 0;
    if (!isExempt && held >= guard.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    perAddress.set(address, held + 1);
    const timer = setTimeout(() => socket.destroy(), guard.headerTimeoutMs);
    timer.unref();
    const key = peerKey(socket);
    if (server instanceof TlsServer) handshaking.set(key, timer);
    else socket[headerTimer] = timer;
    socket.once('close', () => {
      clearTimeout(timer);
      handshaking.delete(key);
      const left = (perAddress.get(address) ?? 1) - 1;
      if (left > 0) perAddress.set(address, left);
      else perAddress.delete(address);
    });
  });
  server.on('secureConnection', (socket: Watched) => {
    const key = peerKey(socket);
    socket[headerTimer] = handshaking.get(key);
    handshaking.delete(key);
  });

  // A request has arrived with all its headers: the connection has earned its slot. Later
  // requests on it are held to the header and keep-alive timeouts by Node itself.
  return (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as Watched;
    const timer = socket[headerTimer];
    if (timer !== undefined) {
      clearTimeout(timer);
      socket[headerTimer] = undefined;
    }
    handler(request, response);
  };
}
