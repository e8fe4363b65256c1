// Berth as a new user meets it: `berth serve`, an API account made with the CLI, and calls over
// HTTPS the way billing software sends them.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FORM, tempDir } from './helpers.ts';
import { berth, post, type Served, serve } from './process.ts';

describe('berth serve over HTTPS, driven like billing software', () => {
  const dataDir = tempDir('berth-e2e-');
  let server: Served;
  const admin = (path: string, body: string, headers: Record<string, string> = FORM) =>
    post(dataDir, server.adminPort, path, { headers, body });

  before(async () => {
    server = await serve(dataDir);
    const created = await berth(
      ['api-user', 'create', 'whmcs', '--password-stdin', '--data-dir', dataDir],
      'whmcs-secret-1\n',
    );
    assert.equal(created.code, 0, created.stderr);
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('writes only JSON lines to standard output, naming its listeners https, and the portal password to a file', () => {
    const lines = server
      .stdout()
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const serving = lines.find((line) => line.msg === 'serving');
    assert.match(String(serving?.admin), /^https:\/\/127\.0\.0\.1:\d+\/$/);
    assert.match(String(serving?.reseller), /^https:\/\/127\.0\.0\.1:\d+\/$/);
    assert.match(String(serving?.customer), /^https:\/\/127\.0\.0\.1:\d+\/$/);
    const listening = lines.filter((line) => /^listening at /.test(String(line.msg)));
    assert.equal(listening.length, 3);
    for (const line of listening) assert.match(String(line.msg), /^listening at https:\/\//);
    assert.ok(server.portalPassword && server.portalPassword.length === 20);
    const file = join(dataDir, 'portal-password');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.ok(!server.output().includes(server.portalPassword), 'the password never reaches the output');
  });

  it('serves a self-signed certificate for the host name, localhost and the loopback addresses', () => {
    const cert = new X509Certificate(readFileSync(join(dataDir, 'tls', 'cert.pem')));
    assert.equal(cert.subject, `CN=${hostname().toLowerCase()}`);
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${hostname().toLowerCase()}`));
    assert.match(cert.subjectAltName ?? '', /DNS:localhost/);
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.match(cert.subjectAltName ?? '', /IP Address:0:0:0:0:0:0:0:1|IP Address:::1/);
  });

  it('answers the credential check and createacct sent as an urlencoded form', async () => {
    const check = await admin('/api/', 'apiuser=whmcs&apiauth=whmcs-secret-1');
    assert.deepEqual(check.json(), { username: 'whmcs', auth: 'API' });
    const created = await admin(
      '/api/v1/createacct/',
      'apiuser=whmcs&apiauth=whmcs-secret-1&user=alice&domain=alice-e2e.example&email=alice%40example.com&package=default&password=Alice-pass-123',
    );
    assert.equal(created.status, 200);
    assert.equal(created.json().info, 'Account alice created');
  });

  it('answers a multipart body as PHP cURL sends it', async () => {
    const form = new FormData();
    form.set('apiuser', 'whmcs');
    form.set('apiauth', 'whmcs-secret-1');
    form.set('user', 'alice');
    const request = new Request('https://x/', { method: 'POST', body: form });
    const body = Buffer.from(await request.arrayBuffer());
    const reply = await admin('/api/v1/accountsummary/', body as unknown as string, {
      'content-type': request.headers.get('content-type')!,
    });
    assert.equal(reply.status, 200);
    assert.equal((reply.json().data as { acct: { user: string } }).acct.user, 'alice');
  });

  it('answers header-style calls, with no body at all', async () => {
    const reply = await post(dataDir, server.adminPort, '/api/v1/get_current_users_count/', {
      headers: { 'X-API-USER': 'whmcs', 'X-API-PASSWORD': 'whmcs-secret-1' },
    });
    assert.deepEqual(reply.json(), { data: { users: 1 }, info: '1 account(s)', status: 200 });
  });

  it('answers reseller calls with X-RESELLER on the reseller port', async () => {
    await admin(
      '/api/v1/createacct/',
      'apiuser=whmcs&apiauth=whmcs-secret-1&user=bob&domain=bob-e2e.example&email=b%40example.com&package=default&reseller=on',
    );
    const headers = {
      'X-API-USER': 'whmcs',
      'X-API-PASSWORD': 'whmcs-secret-1',
      'X-RESELLER': 'bob',
      ...FORM,
    };
    const created = await post(dataDir, server.resellerPort, '/api/v1/createacct/', {
      headers,
      body: 'user=carol&domain=carol-e2e.example&email=c%40example.com&package=default',
    });
    assert.equal(created.status, 200);
    assert.equal((created.json().data as { owner: string }).owner, 'bob');
    const listed = await post(dataDir, server.resellerPort, '/api/v1/listaccts/', { headers });
    assert.deepEqual(Object.keys((listed.json().data as { accounts: object }).accounts), ['carol']);
    const refused = await post(dataDir, server.resellerPort, '/api/v1/listaccts/', {
      headers: { 'X-API-USER': 'whmcs', 'X-API-PASSWORD': 'whmcs-secret-1' },
    });
    assert.equal(refused.status, 403);
  });

  it('refuses the old password from the next request on after a reset with the CLI', async () => {
    const ok = await admin('/api/v1/test_connection/', 'apiuser=whmcs&apiauth=whmcs-secret-1');
    assert.equal(ok.status, 200);
    const reset = await berth(
      ['api-user', 'reset-password', 'whmcs', '--password-stdin', '--data-dir', dataDir],
      'whmcs-secret-2\n',
    );
    assert.equal(reset.code, 0, reset.stderr);
    assert.equal(
      (await admin('/api/v1/test_connection/', 'apiuser=whmcs&apiauth=whmcs-secret-1')).status,
      403,
    );
    assert.equal(
      (await admin('/api/v1/test_connection/', 'apiuser=whmcs&apiauth=whmcs-secret-2')).status,
      200,
    );
  });

  it('shows the calls in the audit log printed by the CLI', async () => {
    const audit = await berth(['audit', '--json', '--limit', '100', '--data-dir', dataDir]);
    assert.equal(audit.code, 0, audit.stderr);
    const entries = JSON.parse(audit.stdout) as {
      operation: string;
      target: string;
      status: number;
      api_user: string;
    }[];
    assert.ok(
      entries.some(
        (e) =>
          e.operation === 'createacct' && e.target === 'alice' && e.status === 200 && e.api_user === 'whmcs',
      ),
    );
    assert.ok(!audit.stdout.includes('Alice-pass-123'));
  });

  it('never writes a password to its log', () => {
    for (const secret of ['whmcs-secret-1', 'whmcs-secret-2', 'Alice-pass-123'])
      assert.ok(!server.output().includes(secret));
  });

  it('reuses its certificate and keeps its data across a restart, and stops cleanly on SIGTERM', async () => {
    const before = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
    assert.equal(await server.stop('SIGTERM'), 0);
    server = await serve(dataDir);
    assert.equal(server.portalPassword, null);
    assert.equal(readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'), before);
    const reply = await admin('/api/v1/get_current_users_count/', 'apiuser=whmcs&apiauth=whmcs-secret-2');
    assert.deepEqual(reply.json().data, { users: 3 });
  });
});

describe('berth serve --no-tls and --demo', () => {
  it('serves plain HTTP, and refuses changes on a demonstration server', async () => {
    const dataDir = tempDir('berth-e2e-');
    const server = await serve(dataDir, ['--no-tls', '--demo']);
    try {
      await berth(
        ['api-user', 'create', 'demo', '--password-stdin', '--data-dir', dataDir],
        'demo-password\n',
      );
      const reply = await post(dataDir, server.adminPort, '/api/v1/createacct/', {
        tls: false,
        headers: FORM,
        body: 'apiuser=demo&apiauth=demo-password&user=x1&domain=x1.example&email=x%40example.com&package=default',
      });
      assert.deepEqual(JSON.parse(reply.body), {
        data: { code: 'demo_server' },
        info: 'This is a demonstration server: changes are disabled',
        status: 403,
      });
      assert.match(server.output(), /TLS is off/);
    } finally {
      await server.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
