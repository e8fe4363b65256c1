// The certificate keeper when ACME fails: the domain keeps its fallback certificate, its state says
// why, and it is tried again later and later (never a stream of orders), in a system root; the
// ACME account's key is ECDSA.
import assert from 'node:assert/strict';
import { createPrivateKey } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sha512Crypt } from '../../src/auth/sha512-crypt.js';
import { loadConfig } from '../../src/config/index.ts';
import { linuxContext } from '../../src/provision/linux/context.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tlsComponent } from '../../src/provision/linux/tls/component.ts';
import { certificateKeeper } from '../../src/provision/linux/tls/keeper.ts';
import type { Account } from '../../src/store/accounts.ts';
import { noObjects } from '../../src/store/objects.ts';
import { tempDir } from '../helpers.ts';
import { makeSystemRoot } from './system-root.ts';

describe('the certificate keeper', () => {
  let refusing: Server;
  let port = 0;
  /** When the "ACME server" took each connection: an order's first request is one. */
  const connections: number[] = [];
  before(async () => {
    // An "ACME server" that takes connections and closes them at once.
    refusing = createServer((socket) => {
      connections.push(Date.now());
      socket.destroy();
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    port = (refusing.address() as { port: number }).port;
  });
  after(() => refusing.close());

  /** A system root with the TLS component ready, its ACME directory the server above. */
  const prepared = async (acme: { ordersPerAccountHour?: number } = {}) => {
    const config = loadConfig({
      dataDir: tempDir(),
      hostName: 'panel.example.net',
      sharedIpv4: '127.0.0.1',
      linux: { systemRoot: makeSystemRoot() },
      acme: { directory: `https://127.0.0.1:${port}/dir`, checkSeconds: 3600, ...acme },
    });
    const ctx = linuxContext(config, execRunner(), async (p) => sha512Crypt(p));
    const tls = tlsComponent(ctx);
    await tls.prepare?.();
    return { config, ctx, tls };
  };

  it('keeps the fallback certificate when ACME fails, and waits longer before each new try', async () => {
    const { config, ctx, tls } = await prepared();
    const account = { user: 'alice', domain: 'alice.example' } as Account;
    await tls.create!(account, { password: '' })[0]!.run();
    const logged: string[] = [];
    const keeper = certificateKeeper(
      ctx,
      tls,
      {
        account: async (user) => (user === 'alice' ? account : undefined),
        accounts: async () => [],
        objects: async () => noObjects(),
      },
      { info: (_, m) => logged.push(m), warn: (_, m) => logged.push(m) },
    );
    try {
      const started = Date.now();
      keeper.watch(account);
      let state = tls.readState('alice.example');
      for (let i = 0; i < 300 && state?.attempts !== 1; i++) {
        await sleep(100);
        state = tls.readState('alice.example');
      }
      assert.equal(state?.state, 'failed');
      assert.equal(state?.attempts, 1);
      assert.match(state!.lastError ?? '', /did not answer/, 'the reason is kept');
      const wait = Date.parse(state!.nextAttempt) - started;
      assert.ok(wait >= 55_000 && wait <= 70_000, `the first retry waits a minute (${wait} ms)`);
      assert.match(state!.issuer, /Berth fallback CA/, 'the fallback certificate stays in place');
      // The ACME account's key, made for the first order: ECDSA P-256 (every request it signs is an
      // ES256 signature, a fraction of RSA's cost), root's alone.
      const keyFile = join(config.dataDir, 'acme/account-key.pem');
      const accountKey = createPrivateKey(readFileSync(keyFile));
      assert.equal(accountKey.asymmetricKeyType, 'ec');
      assert.equal(accountKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
      assert.equal(statSync(keyFile).mode & 0o777, 0o600);

      // Made due again by hand: the second failure waits five minutes.
      tls.writeState('alice.example', { ...state!, nextAttempt: new Date().toISOString() });
      keeper.watch(account);
      for (let i = 0; i < 300 && tls.readState('alice.example')?.attempts !== 2; i++) await sleep(100);
      const second = tls.readState('alice.example')!;
      assert.equal(second.attempts, 2);
      const secondWait = Date.parse(second.nextAttempt) - Date.now();
      assert.ok(secondWait > 4 * 60_000 && secondWait <= 5 * 60_000, `then five minutes (${secondWait} ms)`);
    } finally {
      await keeper.close();
    }
  });

  it("places at most the account's orders of the hour, whatever domains it adds", async () => {
    const { ctx, tls } = await prepared({ ordersPerAccountHour: 2 });
    const account = { user: 'alice', domain: 'alice.example' } as Account;
    const added = ['one.example', 'two.example', 'three.example'];
    for (const domain of [account.domain, ...added])
      await tls.create!({ ...account, domain }, { password: '' })[0]!.run();
    const logged: string[] = [];
    const keeper = certificateKeeper(
      ctx,
      tls,
      {
        account: async (user) => (user === 'alice' ? account : undefined),
        accounts: async () => [],
        objects: async () => ({
          ...noObjects(),
          domains: added.map((domain) => ({ domain, kind: 'addon', docroot: domain, createdAt: new Date() })),
        }),
      },
      { info: (_, m) => logged.push(m), warn: (_, m) => logged.push(m) },
    );
    try {
      for (const domain of [account.domain, ...added]) keeper.watch({ ...account, domain });
      const attempted = () => [account.domain, ...added].filter((d) => tls.readState(d)!.attempts > 0);
      for (let i = 0; i < 300 && attempted().length < 2; i++) await sleep(100);
      await sleep(1500);
      assert.equal(attempted().length, 2, 'two orders, then the hour is used up');
      assert.ok(
        logged.some((m) => /orders of the hour are used up/.test(m)),
        logged.join('\n'),
      );
      // The others keep their fallback certificate and wait for the hour to pass.
      for (const domain of [account.domain, ...added].filter((d) => !attempted().includes(d))) {
        const state = tls.readState(domain)!;
        assert.equal(state.attempts, 0);
        assert.match(state.issuer, /Berth fallback CA/);
      }
    } finally {
      await keeper.close();
    }
  });

  it('orders once the calls pause, or once orders have waited the longest they may', async () => {
    const { ctx, tls } = await prepared();
    const names = Array.from({ length: 40 }, (_, i) => `site${i}.example`);
    for (const domain of names)
      await tls.create!({ user: 'alice', domain } as Account, { password: '' })[0]!.run();
    const store = {
      account: async (user: string) =>
        user === 'alice' ? ({ user, domain: names[0] } as Account) : undefined,
      accounts: async () => [],
      objects: async () => ({
        ...noObjects(),
        domains: names.map((domain) => ({
          domain,
          kind: 'addon' as const,
          docroot: domain,
          createdAt: new Date(),
        })),
      }),
    };
    const quiet = { info: () => {}, warn: () => {} };
    /** A burst of calls, each bringing a domain, 100 ms apart, for `ms`; when it ended. */
    const burst = async (keeper: ReturnType<typeof certificateKeeper>, from: number, ms: number) => {
      for (let i = from, end = Date.now() + ms; Date.now() < end; i++) {
        keeper.watch({ user: 'alice', domain: names[i % names.length]! } as Account);
        await sleep(100);
      }
      return Date.now();
    };
    const ordersAfter = (at: number) => connections.filter((t) => t >= at).length;

    const patient = certificateKeeper(ctx, tls, store, quiet, { quietMs: 500, longestWaitMs: 60_000 });
    try {
      const started = Date.now();
      const ended = await burst(patient, 0, 2_000);
      assert.equal(ordersAfter(started), 0, 'no order while the calls come');
      for (let i = 0; i < 50 && ordersAfter(ended) === 0; i++) await sleep(100);
      assert.ok(ordersAfter(ended) > 0, 'an order once they paused');
    } finally {
      await patient.close();
    }

    const hurried = certificateKeeper(ctx, tls, store, quiet, { quietMs: 500, longestWaitMs: 1_000 });
    try {
      const started = Date.now();
      await burst(hurried, 20, 3_000);
      assert.ok(ordersAfter(started) > 0, 'orders held back at most longestWaitMs, calls or not');
    } finally {
      await hurried.close();
    }
  });
});
