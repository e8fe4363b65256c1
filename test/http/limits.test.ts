// Slow and greedy clients, over real TLS connections to a running server: a client that connects
// and never speaks (not even TLS) is closed within the header timeout, and one address cannot hold
// the slots every caller needs.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { request } from 'node:https';
import { connect as connectTcp, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { type LimitsConfig, loadConfig } from '../../src/config/index.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { tempDir } from '../helpers.ts';

function open(port: number, options: { maxVersion?: 'TLSv1.1' } = {}): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...options }, () =>
      resolve(socket),
    );
    socket.once('error', reject);
  });
}

/** Resolves with the milliseconds until the server closes the socket. */
function closedAfter(socket: TLSSocket): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    socket.on('data', () => {});
    socket.once('close', () => resolve(performance.now() - started));
  });
}

/** A TCP connection from `localAddress` that sends nothing; resolves once connected. */
function idle(port: number, localAddress = '127.0.0.1'): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connectTcp({ host: '127.0.0.1', port, localAddress }, () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Whether the server closes the socket within `ms`. */
function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    socket.on('error', () => {});
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/**
 * POSTs version without credentials over HTTPS from `localAddress`: any answer (403
 * not_authenticated) proves the server took the connection; a reset or refusal is the error.
 */
function call(
  port: number,
  localAddress: string,
): Promise<{ status: number; headers: Record<string, unknown> } | { error: string }> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        localAddress,
        method: 'POST',
        path: '/api/v1/version/',
        rejectUnauthorized: false,
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.end();
  });
}

/** A running server on loopback with these limits, started before and stopped after a suite. */
function serverWith(
  limits: Partial<LimitsConfig>,
  trustedProxies: string[] = [],
): { port: () => number; customerPort: () => number } {
  const dataDir = tempDir('berth-limits-');
  let server: RunningServer;
  before(async () => {
    process.env.BERTH_LOG_LEVEL = 'silent';
    const config = loadConfig({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      resellerPort: 0,
      customerPort: 0,
      limits,
      trustedProxies,
    });
    server = await startServer(config);
  });
  after(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { port: () => server.ports.admin, customerPort: () => server.ports.customer };
}

describe('limits on slow and greedy clients', () => {
  const server = serverWith({ headerTimeout: 1, requestTimeout: 2, keepAliveTimeout: 1, maxConnections: 4 });
  let port: number;
  before(() => {
    port = server.port();
  });

  it('closes a connection whose headers never finish (slow-loris)', async () => {
    const socket = await open(port);
    socket.write('POST /api/v1/test_connection/ HTTP/1.1\r\nHost: localhost\r\n');
    const ms = await closedAfter(socket);
    assert.ok(ms < 5000, `closed after ${ms} ms`);
  });

  it('closes a connection whose body trickles in too slowly', async () => {
    const socket = await open(port);
    socket.write(
      'POST /api/v1/test_connection/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\na=',
    );
    const drip = setInterval(() => socket.writable && socket.write('b'), 300);
    const ms = await closedAfter(socket);
    clearInterval(drip);
    assert.ok(ms < 6000, `closed after ${ms} ms`);
  });

  it('closes an idle keep-alive connection', async () => {
    const socket = await open(port);
    const closed = closedAfter(socket);
    socket.write('POST /api/v1/test_connection/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n');
    const ms = await closed;
    assert.ok(ms < 5000, `closed after ${ms} ms`);
  });

  it('refuses connections beyond the cap', async () => {
    const held = await Promise.all(Array.from({ length: 4 }, () => open(port)));
    const extra = await new Promise<'closed' | 'open'>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => resolve('open'));
      socket.once('error', () => resolve('closed'));
      socket.once('close', () => resolve('closed'));
    });
    assert.equal(extra, 'closed');
    for (const socket of held) socket.destroy();
  });

  it('speaks TLS 1.2 and later only', async () => {
    await assert.rejects(open(port, { maxVersion: 'TLSv1.1' }));
    const modern = await open(port);
    assert.match(String(modern.getProtocol()), /^TLSv1\.[23]$/);
    modern.destroy();
  });
});

describe('connection slots', () => {
  const server = serverWith({ headerTimeout: 1, maxConnections: 40, maxConnectionsPerAddress: 5 }, [
    '127.0.0.8',
  ]);
  let port: number;
  before(() => {
    port = server.port();
  });

  it('closes a connection that never starts TLS within the header timeout', async () => {
    const socket = await idle(port, '127.0.0.3');
    assert.equal(await closedWithin(socket, 4000), true);
  });

  it('lets one address hold only its share of the connections; others still get in', async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => idle(port, '127.0.0.4')));
    const extra = await idle(port, '127.0.0.4');
    assert.equal(await closedWithin(extra, 500), true, 'the sixth connection from one address');
    const other = await call(port, '127.0.0.5');
    assert.ok('status' in other, JSON.stringify(other));
    assert.equal(other.status, 403);
    for (const socket of held) socket.destroy();
  });

  it('counts the customer listener’s connections by network: every loopback address shares one share', async () => {
    const customer = server.customerPort();
    const held = await Promise.all(Array.from({ length: 5 }, (_, i) => idle(customer, `127.0.1.${i + 1}`)));
    const extra = await idle(customer, '127.0.1.99');
    assert.equal(await closedWithin(extra, 500), true, 'a sixth connection from another loopback address');
    for (const socket of held) socket.destroy();
    // The admin listener still counts each address apart (billing on the same server).
    const admin = await Promise.all(Array.from({ length: 5 }, (_, i) => idle(port, `127.0.2.${i + 1}`)));
    const more = await idle(port, '127.0.2.99');
    assert.equal(await closedWithin(more, 500), false);
    for (const socket of [...admin, more]) socket.destroy();
  });

  it('lets a trusted proxy, which speaks for many clients, hold more than one address’s share', async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => idle(port, '127.0.0.8')));
    const through = await call(port, '127.0.0.8');
    assert.ok('status' in through, JSON.stringify(through));
    for (const socket of held) assert.equal(socket.destroyed, false);
    for (const socket of held) socket.destroy();
  });

  it('serves callers while an attacker keeps opening connections that never speak', async () => {
    let stop = false;
    const attack: Socket[] = [];
    const flood = (async () => {
      while (!stop) {
        try {
          attack.push(await idle(port, '127.0.0.6'));
        } catch {
          // refused: the address holds its share already
        }
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    try {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => call(port, `127.0.1.${i + 1}`)));
      assert.deepEqual(
        replies.map((r) => ('status' in r ? r.status : r.error)),
        Array(10).fill(403),
      );
    } finally {
      stop = true;
      await flood;
      for (const socket of attack) socket.destroy();
    }
  });

  it('tells browsers to come back over HTTPS only', async () => {
    const reply = await call(port, '127.0.0.7');
    assert.ok('status' in reply);
    assert.equal(reply.headers['strict-transport-security'], 'max-age=31536000');
    assert.equal(reply.headers['x-content-type-options'], 'nosniff');
  });
});

describe('a connection that has sent its first request', () => {
  const server = serverWith({ headerTimeout: 1, requestTimeout: 5, keepAliveTimeout: 5 });

  it('keeps its slot past the header timeout, for as long as keep-alive allows', async () => {
    const socket = await open(server.port());
    const answers: string[] = [];
    socket.on('data', (chunk: Buffer) => answers.push(String(chunk)));
    const ask = async () => {
      const before = answers.length;
      socket.write('POST /api/v1/version/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n');
      while (answers.length === before && !socket.destroyed)
        await new Promise((resolve) => setTimeout(resolve, 20));
      return answers.at(-1) ?? '';
    };
    try {
      assert.match(await ask(), /^HTTP\/1\.1 403 /);
      // Twice the header timeout: a connection still waiting for its first request is closed by now.
      assert.equal(await closedWithin(socket, 2000), false, 'closed at the header timeout');
      assert.match(await ask(), /^HTTP\/1\.1 403 /);
    } finally {
      socket.destroy();
    }
  });
});

/** The answers that come on `socket`, one at a time: status and body (each has a Content-Length). */
function answersOn(socket: TLSSocket): () => Promise<{ status: number; body: string }> {
  let text = '';
  let waiting: (() => void) | null = null;
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    waiting?.();
  });
  return () =>
    new Promise((resolve) => {
      const take = () => {
        const end = text.indexOf('\r\n\r\n');
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1]);
        if (end === -1 || text.length < end + 4 + length) return;
        waiting = null;
        resolve({ status: Number(text.slice(9, 12)), body: text.slice(end + 4, end + 4 + length) });
        text = text.slice(end + 4 + length);
      };
      waiting = take;
      take();
    });
}

describe('a body however it arrives', () => {
  const server = serverWith({});
  const head = (extra: string) =>
    `POST /api/v1/test_connection/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n${extra}\r\n`;
  // Read whole, a body naming apiuser twice is refused for it: proof the body was read.
  const twice = 'apiuser=a&apiuser=b&apiauth=c';
  const refusedForTwice = (answer: { status: number; body: string }) => {
    assert.equal(answer.status, 400, answer.body);
    assert.match(answer.body, /apiuser/);
  };

  it('with its headers, after them, in pieces and chunked, calls after calls on one connection', async () => {
    const socket = await open(server.port());
    const nextAnswer = answersOn(socket);
    const length = `Content-Length: ${twice.length}\r\n`;
    socket.write(head(length) + twice);
    refusedForTwice(await nextAnswer());
    // Two calls in one write, the second's body last.
    socket.write(head(length) + twice + head(length) + twice);
    refusedForTwice(await nextAnswer());
    refusedForTwice(await nextAnswer());
    // An empty form: no credentials.
    socket.write(head('Content-Length: 0\r\n'));
    assert.equal((await nextAnswer()).status, 403);
    socket.write(head(length));
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(twice);
    refusedForTwice(await nextAnswer());
    socket.write(head(length) + twice.slice(0, 5));
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write(twice.slice(5));
    refusedForTwice(await nextAnswer());
    const chunked = `${(12).toString(16)}\r\n${twice.slice(0, 12)}\r\n${(twice.length - 12).toString(16)}\r\n${twice.slice(12)}\r\n0\r\n\r\n`;
    socket.write(head('Transfer-Encoding: chunked\r\n') + chunked);
    refusedForTwice(await nextAnswer());
    socket.destroy();
  });

  it('answers on after a connection cut in the middle of a body', async () => {
    const cut = await open(server.port());
    cut.write(head(`Content-Length: ${twice.length}\r\n`) + twice.slice(0, 5));
    await new Promise((resolve) => setTimeout(resolve, 50));
    cut.destroy();
    const socket = await open(server.port());
    socket.write(head(`Content-Length: ${twice.length}\r\n`) + twice);
    refusedForTwice(await answersOn(socket)());
    socket.destroy();
  });

  it('refuses more than 64 KiB with 413, declared or not', async () => {
    const socket = await open(server.port());
    socket.write(head('Content-Length: 70000\r\n'));
    const declared = await answersOn(socket)();
    assert.equal(declared.status, 413, declared.body);
    socket.destroy();
    const undeclared = await open(server.port());
    const answer = answersOn(undeclared)();
    undeclared.write(head('Transfer-Encoding: chunked\r\n'));
    const piece = `${(1000).toString(16)}\r\n${'x'.repeat(1000)}\r\n`;
    for (let i = 0; i < 70 && !undeclared.destroyed; i++) undeclared.write(piece);
    assert.equal((await answer).status, 413);
    undeclared.destroy();
  });
});
