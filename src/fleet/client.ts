// One server calling another (CONTRACT §12). The caller proves it is of the fleet by signing each
// request with the fleet's secret (kept in the store, which only the fleet's servers reach); the
// called server proves it is the one registered by presenting the certificate whose fingerprint it
// wrote into the store. Nothing is sent before that certificate is checked. The signature covers
// the sending and the target server's names, the time and a random nonce: a captured request is
// refused by every other server, and by its target when it comes again.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { request } from 'node:https';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { connect, type TLSSocket } from 'node:tls';

/** A signature older (or newer) than this is refused: a captured request cannot be replayed later. */
const SIGNATURE_WINDOW_MS = 60_000;
const CONNECT_TIMEOUT_MS = 5_000;

export const FLEET_HEADERS = {
  server: 'x-berth-server',
  target: 'x-berth-target',
  time: 'x-berth-time',
  nonce: 'x-berth-nonce',
  signature: 'x-berth-signature',
} as const;

/** 128 random bits, in hex. */
const NONCE = /^[0-9a-f]{32}$/;

/** The other server could not be reached, or did not answer, or is not the one registered. */
export class Unreachable extends Error {
  /** Whether the request may have arrived (a lost answer) rather than surely not. */
  readonly maybeArrived: boolean;

  constructor(message: string, maybeArrived: boolean) {
    super(message);
    this.name = 'Unreachable';
    this.maybeArrived = maybeArrived;
  }
}

export interface Peer {
  name: string;
  advertiseUrl: string;
  tlsFingerprint: string | null;
}

/** Who sends a request and which server it is for. */
export interface Route {
  from: string;
  to: string;
}

function signature(secret: string, route: Route, time: string, nonce: string, path: string, body: string) {
  const digest = createHash('sha256').update(body).digest('hex');
  return createHmac('sha256', secret)
    .update(`${route.from}\n${route.to}\n${time}\n${nonce}\n${path}\n${digest}`)
    .digest('hex');
}

/** The headers that make a request the fleet's, for the one server `route.to`. */
export function signedHeaders(
  secret: string,
  route: Route,
  path: string,
  body: string,
  now = Date.now(),
  nonce = randomBytes(16).toString('hex'),
) {
  const time = String(now);
  return {
    [FLEET_HEADERS.server]: route.from,
    [FLEET_HEADERS.target]: route.to,
    [FLEET_HEADERS.time]: time,
    [FLEET_HEADERS.nonce]: nonce,
    [FLEET_HEADERS.signature]: signature(secret, route, time, nonce, path, body),
  };
}

/**
 * The nonces of the requests a server has accepted, each kept until its signature's time leaves
 * the window (after that the time alone refuses it again). Only requests with a valid signature are
 * remembered, so no one outside the fleet can fill it. Memory of this process: a request is for one
 * server, named in what is signed, so no other server would accept it whatever it remembers.
 */
export class SeenNonces {
  readonly #until = new Map<string, number>();
  #nextSweepMs = 0;

  /** Remembers the nonce; false when it was already seen within the window. */
  firstSight(nonce: string, time: number, now = Date.now()): boolean {
    if (now >= this.#nextSweepMs) {
      this.#nextSweepMs = now + SIGNATURE_WINDOW_MS;
      for (const [seen, until] of this.#until) if (until < now) this.#until.delete(seen);
    }
    if (this.#until.has(nonce)) return false;
    this.#until.set(nonce, time + SIGNATURE_WINDOW_MS);
    return true;
  }
}

/**
 * A request's signature headers when they are whole, name this server (`self`) and are fresh: what
 * can be known of a fleet request before its body is read. Only the signature over the body, once
 * read, says it is the fleet's.
 */
export function claimsFleetSignature(
  headers: Record<string, string | string[] | undefined>,
  self: string,
  now = Date.now(),
): { from: string; to: string; time: string; nonce: string; given: string } | null {
  const from = headers[FLEET_HEADERS.server];
  const to = headers[FLEET_HEADERS.target];
  const time = headers[FLEET_HEADERS.time];
  const nonce = headers[FLEET_HEADERS.nonce];
  const given = headers[FLEET_HEADERS.signature];
  if (typeof from !== 'string' || typeof to !== 'string' || typeof given !== 'string') return null;
  if (typeof time !== 'string' || !/^\d{1,15}$/.test(time)) return null;
  if (typeof nonce !== 'string' || !NONCE.test(nonce)) return null;
  if (to !== self) return null;
  if (Math.abs(now - Number(time)) > SIGNATURE_WINDOW_MS) return null;
  return { from, to, time, nonce, given };
}

/**
 * Whether a request carries a valid, fresh signature of the fleet for this server (`self`), with a
 * nonce `seen` has not had within the window.
 */
export function verifySignature(
  secret: string,
  headers: Record<string, string | string[] | undefined>,
  path: string,
  body: string,
  self: string,
  seen: SeenNonces,
  now = Date.now(),
): boolean {
  const claimed = claimsFleetSignature(headers, self, now);
  if (!claimed) return false;
  const { from, to, time, nonce, given } = claimed;
  const expected = Buffer.from(signature(secret, { from, to }, time, nonce, path, body));
  const actual = Buffer.from(given);
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected)) return false;
  return seen.firstSight(nonce, Number(time), now);
}

/** Opens TLS to the peer and checks its certificate against the registered fingerprint. */
function pinnedSocket(peer: Peer, url: URL): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const socket = connect({
      host,
      port: Number(url.port || 443),
      servername: isIP(host) ? undefined : host,
      rejectUnauthorized: false, // the pin below is the check: the store names the certificate
    });
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new Error('no TLS handshake in time')));
    socket.once('error', (error) => reject(new Unreachable(`${peer.name}: ${error.message}`, false)));
    socket.once('secureConnect', () => {
      socket.setTimeout(0);
      const presented = socket.getPeerCertificate().fingerprint256;
      if (presented !== peer.tlsFingerprint) {
        socket.destroy();
        reject(
          new Unreachable(`${peer.name} presented a certificate other than the one it registered`, false),
        );
        return;
      }
      resolve(socket);
    });
  });
}

/** Posts a JSON body to a peer and resolves with its answer as it starts to arrive. */
async function requestPeer(
  peer: Peer,
  path: string,
  body: object,
  sign: (path: string, body: string) => Record<string, string>,
  timeoutMs: number,
): Promise<IncomingMessage> {
  const url = new URL(path, peer.advertiseUrl);
  if (url.protocol !== 'https:' || peer.tlsFingerprint === null) {
    throw new Unreachable(`${peer.name} serves without TLS; servers of a fleet speak HTTPS only`, false);
  }
  const socket = await pinnedSocket(peer, url);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        createConnection: () => socket,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...sign(url.pathname, text),
        },
        timeout: timeoutMs,
      },
      resolve,
    );
    req.on('timeout', () => req.destroy(new Error('no answer in time')));
    req.on('error', (error) => reject(new Unreachable(`${peer.name}: ${error.message}`, true)));
    req.end(text);
  });
}

async function readAnswer(peer: Peer, res: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res) chunks.push(chunk as Buffer);
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw new Unreachable(`${peer.name}: the answer was cut off`, true);
  }
}

/**
 * Posts a JSON body to a peer and returns its status and JSON answer. Throws Unreachable when the
 * peer cannot be reached or its answer is lost.
 */
export async function postToPeer(
  peer: Peer,
  path: string,
  body: object,
  sign: (path: string, body: string) => Record<string, string>,
  timeoutMs: number,
): Promise<{ status: number; answer: Record<string, unknown> }> {
  const res = await requestPeer(peer, path, body, sign, timeoutMs);
  return { status: res.statusCode ?? 0, answer: await readAnswer(peer, res) };
}

/**
 * Posts a JSON body to a peer whose answer is a stream (an account's files): the stream when the
 * peer answers 200, which fails if cut off; otherwise an error with the peer's own message.
 */
export async function streamFromPeer(
  peer: Peer,
  path: string,
  body: object,
  sign: (path: string, body: string) => Record<string, string>,
  timeoutMs: number,
): Promise<Readable> {
  const res = await requestPeer(peer, path, body, sign, timeoutMs);
  if (res.statusCode === 200) return res;
  const answer = await readAnswer(peer, res);
  throw new Error(`${peer.name} answered ${res.statusCode}: ${String(answer.error ?? 'no reason given')}`);
}
