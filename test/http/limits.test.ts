// Slow and greedy clients, over real TLS connections to a running server.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { connect, type TLSSocket } from 'node:tls';
import { loadConfig } from '../../src/config.ts';
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

describe('limits on slow and greedy clients', () => {
  const dataDir = tempDir('berth-limits-');
  let server: RunningServer;
  let port: number;

  before(async () => {
    process.env.BERTH_LOG_LEVEL = 'silent';
    const config = loadConfig({
      dataDir,
      host: '127.0.0.1',
      port: 0,
      resellerPort: 0,
      limits: { headerTimeout: 1, requestTimeout: 2, keepAliveTimeout: 1, maxConnections: 4 },
    });
    server = await startServer(config, () => {});
    port = server.ports.admin;
  });
  after(async () => {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
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
