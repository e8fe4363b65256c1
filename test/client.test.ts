// The typed client, imported as integrators do ('berth-client'), against a real server over HTTPS.
import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BerthClient, BerthError, BerthHolderClient } from 'berth-client';
import { tempDir } from './helpers.ts';
import { berth, type Served, serve } from './process.ts';

describe('BerthClient against berth serve', () => {
  const dataDir = tempDir('berth-client-');
  let server: Served;
  let client: (options?: Partial<ConstructorParameters<typeof BerthClient>[0]>) => BerthClient;

  before(async () => {
    server = await serve(dataDir);
    await berth(
      ['api-user', 'create', 'whmcs', '--password-stdin', '--data-dir', dataDir],
      'whmcs-password-1',
    );
    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'));
    client = (options = {}) =>
      new BerthClient({
        url: `https://localhost:${server.adminPort}`,
        user: 'whmcs',
        password: 'whmcs-password-1',
        ca,
        ...options,
      });
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('calls in header and in form style, with typed parameters', async () => {
    assert.deepEqual(await client().call('test_connection'), { test: 'Connection successful' });
    assert.deepEqual(await client({ style: 'form' }).call(''), { username: 'whmcs', auth: 'API' });
    const created = await client().call('createacct', {
      user: 'alice',
      domain: 'alice-client.example',
      email: 'a@example.com',
      package: 'default',
      quota: 500,
      dkim: false,
    });
    // Typed per operation: createacct resolves with the account record.
    const dkim: 'on' | 'off' = created.dkim;
    assert.deepEqual([created.quota, dkim], ['500', 'off']);
    const { acct } = await client().call('accountsummary', { user: 'alice' });
    assert.equal(acct.quota_usage + acct.bandwidth_usage, 0);
  });

  it('rejects with a BerthError carrying the error code and parameter', async () => {
    await assert.rejects(client().call('accountsummary', { user: 'ghost' }), (error: unknown) => {
      assert.ok(error instanceof BerthError);
      assert.deepEqual([error.status, error.code, error.param], [400, 'account_not_found', 'user']);
      return true;
    });
    await assert.rejects(client({ password: 'wrong-password' }).call('listaccts'), {
      code: 'forbidden',
      status: 403,
    });
  });

  it('acts as a reseller, on the reseller listener', async () => {
    await client().call('createacct', {
      user: 'bob',
      domain: 'bob-client.example',
      email: 'b@example.com',
      package: 'default',
      reseller: true,
    });
    const reseller = client({ url: `https://localhost:${server.resellerPort}`, reseller: 'bob' });
    await reseller.call('createacct', {
      user: 'carol',
      domain: 'carol-client.example',
      email: 'c@example.com',
      package: 'default',
    });
    const { accounts } = await reseller.call('listaccts');
    assert.deepEqual(Object.keys(accounts), ['carol']);
  });

  it('sends an idempotency key, so that a retried change acts once', async () => {
    const params = {
      user: 'dave',
      domain: 'dave-client.example',
      email: 'd@example.com',
      package: 'default',
    };
    const first = await client().call('createacct', params, { idempotencyKey: 'invoice-77' });
    const again = await client().call('createacct', params, { idempotencyKey: 'invoice-77' });
    assert.deepEqual(again, first);
  });

  it('calls a holder’s operations for the holder, and as the holder with its password or a token', async () => {
    await client().call('createacct', {
      user: 'erin',
      domain: 'erin-client.example',
      email: 'e@example.com',
      package: 'default',
      password: 'erin-pass-1234',
    });
    const added = await client().callForHolder('erin', 'add_domain', {
      domain: 'erin-shop.example',
      type: 'addon',
    });
    // Typed per operation: add_domain resolves with the domain made.
    const type: 'main' | 'addon' | 'parked' | 'subdomain' = added.type;
    assert.deepEqual(
      [added.domain, type, added.docroot],
      ['erin-shop.example', 'addon', 'public_html/erin-shop.example'],
    );

    const ca = readFileSync(join(dataDir, 'tls', 'cert.pem'));
    const url = `https://localhost:${server.customerPort}`;
    const holder = new BerthHolderClient({ url, user: 'erin', password: 'erin-pass-1234', ca });
    const info = await holder.call('account_info');
    assert.deepEqual([info.user, info.limits.addondomains.used], ['erin', 1]);
    const { token } = await holder.call('add_token', { name: 'deploy' });
    const byToken = new BerthHolderClient({ url, token, ca });
    const domains = await byToken.call('list_domains');
    assert.deepEqual(
      domains.map((d) => d.domain),
      ['erin-client.example', 'erin-shop.example'],
    );
    await assert.rejects(
      new BerthHolderClient({ url, user: 'erin', password: 'not-erins-pass', ca }).call('account_info'),
      {
        code: 'forbidden',
        status: 403,
      },
    );
  });
});

describe('BerthClient retries and timeouts', () => {
  let attempts = 0;
  let mode: 'flaky' | 'silent' = 'flaky';
  const fake = createServer((request, response) => {
    attempts++;
    request.resume();
    if (mode === 'silent') return; // never answers
    if (attempts < 3) {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end('{"data":{"code":"internal"},"info":"try again","status":500}');
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"data":{"users":1},"info":"1 account(s)","status":200}');
  });
  let url = '';
  before(async () => {
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  after(() => {
    fake.closeAllConnections();
    fake.close();
  });

  it('retries a read after a server error, but not a change without an idempotency key', async () => {
    attempts = 0;
    const client = new BerthClient({ url, user: 'u', password: 'p' });
    assert.deepEqual(await client.call('get_current_users_count'), { users: 1 });
    assert.equal(attempts, 3);
    attempts = 0;
    await assert.rejects(client.call('suspendacct', { user: 'x' }), { status: 500 });
    assert.equal(attempts, 1);
  });

  it('gives up after its timeout', async () => {
    mode = 'silent';
    const client = new BerthClient({ url, user: 'u', password: 'p', timeoutMs: 300, retries: 0 });
    await assert.rejects(
      client.call('listaccts'),
      (error: Error) => error.name === 'TimeoutError' || /abort/i.test(error.message),
    );
  });
});
