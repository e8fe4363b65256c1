// The WHMCS module, called the way WHMCS calls it (integrations/whmcs/test/harness.php, on
// Debian's php-cli), against a real `berth serve` over HTTPS; Berth's state is checked after each.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import type { Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect as connectTls, createServer as createTlsServer } from 'node:tls';
import { loadConfig } from '../../src/config/index.ts';
import { PANEL_PAGES } from '../../src/operations/create-user-session.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { listAudit } from '../../src/store/audit.ts';
import { takeSsoToken } from '../../src/store/sso-tokens.ts';
import { addApiUser, tempDir } from '../helpers.ts';

const HARNESS = join(import.meta.dirname, '../../integrations/whmcs/test/harness.php');
const MODULE = join(import.meta.dirname, '../../integrations/whmcs/modules/servers/berth');
const ADMIN = { user: 'whmcs', password: 'whmcs-api-secret' };
const BOUND = { user: 'whmcsres', password: 'whmcs-res-secret' };

interface Outcome {
  result: unknown;
  exception: string | null;
  log: { action: string; request: Record<string, unknown>; replace: string[] }[];
}

describe('the WHMCS module', () => {
  const dir = tempDir('berth-whmcs-');
  const state = join(dir, 'whmcs-state.json');
  let server: RunningServer;
  let port: number;
  let certificate: string;
  let dropping: Server;
  let droppingPort: number;

  /** Runs one module function through the harness. */
  function whmcs(
    fn: string,
    params?: Record<string, unknown>,
    env: Record<string, string> = {},
    query?: Record<string, string>,
  ): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const child = execFile(
        '/usr/bin/php',
        [HARNESS],
        { env: { ...process.env, ...env, BERTH_WHMCS_STATE: state }, timeout: 200_000 },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`${fn}: ${error.message} ${stderr}`));
          else resolve(JSON.parse(stdout) as Outcome);
        },
      );
      child.stdin!.end(JSON.stringify({ function: fn, params, request: query }));
    });
  }

  /** The $params WHMCS passes for a service on this server. */
  function service(id: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
      serverid: 1,
      serverhostname: '127.0.0.1',
      serverip: '127.0.0.1',
      serverport: port,
      serversecure: true,
      serverusername: ADMIN.user,
      serverpassword: ADMIN.password,
      serveraccesshash: certificate,
      serviceid: id,
      producttype: 'hostingaccount',
      username: `svc${id}`,
      domain: `svc${id}.example`,
      password: `Service-pass-${id}`,
      clientsdetails: { email: `client${id}@example.com` },
      configoption1: 'default',
      configoption2: 'on',
      configoption3: 'on',
      configoption4: '',
      configoption5: 'local',
      ...extra,
    };
  }

  /** Calls Berth directly, as the administrator, trusting its certificate. */
  function berth(op: string, params: Record<string, string> = {}) {
    return new Promise<{ status: number; data: Record<string, unknown> }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: `/api/v1/${op}/`,
          ca: certificate,
          headers: {
            'x-api-user': ADMIN.user,
            'x-api-password': ADMIN.password,
            'content-type': 'application/x-www-form-urlencoded',
          },
        },
        (res) => {
          let body = '';
          res.on('data', (chunk) => {
            body += chunk;
          });
          res.on('end', () => resolve(JSON.parse(body)));
        },
      );
      req.on('error', reject);
      req.end(new URLSearchParams(params).toString());
    });
  }

  before(async () => {
    process.env.BERTH_LOG_LEVEL = 'silent';
    const config = loadConfig({ dataDir: dir, host: '127.0.0.1', port: 0, resellerPort: 0, customerPort: 0 });
    server = await startServer(config);
    port = server.ports.admin;
    certificate = readFileSync(join(dir, 'tls/cert.pem'), 'utf8');
    await addApiUser(server.services, { name: ADMIN.user, password: ADMIN.password });
    // A TLS front with Berth's own certificate that passes each call on and, once Berth has
    // answered, drops the answer: a timeout after Berth acted, before the module read it.
    const key = readFileSync(join(dir, 'tls/key.pem'), 'utf8');
    dropping = createTlsServer({ key, cert: certificate }, (client) => {
      const upstream = connectTls({ host: '127.0.0.1', port, rejectUnauthorized: false });
      client.pipe(upstream);
      upstream.once('data', () => setTimeout(() => client.destroy(), 50));
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      client.on('close', () => upstream.destroy());
    });
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve));
    droppingPort = (dropping.address() as { port: number }).port;
    writeFileSync(
      state,
      JSON.stringify({
        tables: {
          tblhosting: [1, 2, 3].map((id) => ({ id, server: 1, domain: `svc${id}.example`, diskusage: 0 })),
        },
        log: [],
      }),
    );
  });
  after(async () => {
    dropping.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('describes itself and its options as WHMCS reads them', async () => {
    const meta = (await whmcs('MetaData')).result as Record<string, unknown>;
    assert.equal(meta.DisplayName, 'Berth');
    assert.equal(meta.ListAccountsProductField, 'configoption1');
    const options = (await whmcs('ConfigOptions')).result as Record<string, { Type: string }>;
    assert.deepEqual(Object.keys(options), [
      'Package',
      'DKIM',
      'SPF',
      'Shell access',
      'Mail server',
      'Reseller',
      'Reseller account limit',
      'Reseller disk quota',
      'Reseller bandwidth',
    ]);
    await berth('addpkg', { name: 'gold', quota: '2048' });
    const packages = await whmcs('LoadPackages', service(0));
    assert.deepEqual(packages.result, { default: 'default', gold: 'gold' });
  });

  it('tests the connection with the certificate as PEM or SHA-256 fingerprint, never unverified', async () => {
    const fingerprint = new X509Certificate(certificate).fingerprint256;
    for (const hash of [certificate, fingerprint, fingerprint.replaceAll(':', '').toLowerCase()]) {
      const outcome = await whmcs('TestConnection', service(0, { serveraccesshash: hash }));
      assert.deepEqual(outcome.result, { success: true, error: '' }, hash.slice(0, 20));
    }
    const wrong = await whmcs('TestConnection', service(0, { serveraccesshash: `${'AB:'.repeat(31)}AB` }));
    assert.equal((wrong.result as { success: boolean }).success, false);
    assert.match(String((wrong.result as { error: string }).error), /fingerprint/);
    // No access hash: the system's CA store, which does not know a self-signed certificate.
    const system = await whmcs('TestConnection', service(0, { serveraccesshash: '' }));
    assert.equal((system.result as { success: boolean }).success, false);
    const badPassword = await whmcs('TestConnection', service(0, { serverpassword: 'wrong-password' }));
    assert.match(String((badPassword.result as { error: string }).error), /\(forbidden\)$/);
  });

  it('creates an account, and a retry of the same service is no error', async () => {
    const created = await whmcs('CreateAccount', service(1, { configoption1: 'gold', configoption4: 'on' }));
    assert.equal(created.result, 'success');
    const acct = (await berth('accountsummary', { user: 'svc1' })).data.acct as Record<string, unknown>;
    assert.deepEqual(
      [acct.domain, acct.package, acct.contactemail, (acct.shell as { status: string }).status],
      ['svc1.example', 'gold', 'client1@example.com', 'on'],
    );
    assert.equal((await whmcs('CreateAccount', service(1, { configoption1: 'gold' }))).result, 'success');
  });

  it('a timeout after Berth acted, then a retry, leaves exactly one account', async () => {
    const lost = await whmcs('CreateAccount', service(2, { serverport: droppingPort }));
    assert.notEqual(lost.result, 'success');
    assert.match(String(lost.result), /Could not reach Berth/);
    assert.equal((await berth('accountsummary', { user: 'svc2' })).status, 200, 'Berth acted');
    const retried = await whmcs('CreateAccount', service(2));
    assert.equal(retried.result, 'success');
    const [entry] = await listAudit(server.services.store.db, { limit: 1 });
    assert.deepEqual([entry!.operation, entry!.code], ['createacct', 'replayed']);
    const users = (await berth('get_current_users_count')).data.users;
    assert.equal(users, 2);
  });

  it('retries once too where WHMCS’s database has no table for the module', async () => {
    const minimal = { BERTH_WHMCS_ONLY_TBLHOSTING: '1' };
    const lost = await whmcs('CreateAccount', service(4, { serverport: droppingPort }), minimal);
    assert.match(String(lost.result), /Could not reach Berth/);
    assert.equal((await whmcs('CreateAccount', service(4), minimal)).result, 'success');
    const [entry] = await listAudit(server.services.store.db, { limit: 1 });
    assert.deepEqual([entry!.operation, entry!.code], ['createacct', 'replayed']);
    assert.equal((await whmcs('TerminateAccount', service(4), minimal)).result, 'success');
  });

  it('suspends with the reason, shows it to the administrator, and unsuspends', async () => {
    const reason = 'Overdue invoice 1042';
    assert.equal((await whmcs('SuspendAccount', service(1, { suspendreason: reason }))).result, 'success');
    const suspended = (await berth('listsuspended')).data.accounts as Record<string, { reason: string }>;
    assert.equal(suspended.svc1?.reason, reason);
    const tab = (await whmcs('AdminServicesTabFields', service(1))).result as Record<string, string>;
    assert.match(tab['Berth state']!, /^Suspended since /);
    assert.equal(tab['Suspension reason'], reason);
    assert.equal(tab['Berth package'], 'gold');
    assert.equal((await whmcs('UnsuspendAccount', service(1))).result, 'success');
    assert.deepEqual((await berth('listsuspended')).data.accounts, {});
  });

  it('changes the password and the package, and never logs a password', async () => {
    const changed = await whmcs('ChangePassword', service(1, { password: 'A-new-password-1' }));
    assert.equal(changed.result, 'success');
    assert.equal((await whmcs('ChangePackage', service(1, { configoption1: 'default' }))).result, 'success');
    const acct = (await berth('accountsummary', { user: 'svc1' })).data.acct as Record<string, unknown>;
    assert.equal(acct.package, 'default');
    for (const entry of changed.log) {
      assert.ok(!JSON.stringify(entry.request).includes('A-new-password-1'), entry.action);
      assert.ok(!JSON.stringify(entry.request).includes(ADMIN.password), entry.action);
    }
    const passwd = changed.log.find((entry) => entry.action === 'passwd')!;
    assert.ok(passwd.replace.includes('A-new-password-1') && passwd.replace.includes(ADMIN.password));
  });

  it('says what is wrong in words a billing clerk can act on, with the error code', async () => {
    const taken = await whmcs('CreateAccount', service(3, { domain: 'svc1.example' }));
    assert.match(String(taken.result), /svc1\.example .*\(domain_in_use\)$/);
    const unknown = await whmcs('CreateAccount', service(3, { configoption1: 'platinum' }));
    assert.match(String(unknown.result), /platinum.*\(package_not_found\)$/);
  });

  it('updates the usage of every service on the server from one call', async () => {
    const outcome = await whmcs('UsageUpdate', service(0));
    assert.equal(outcome.result, 'success');
    assert.deepEqual(
      outcome.log.map((entry) => entry.action),
      ['usagestatistics'],
    );
    const saved = JSON.parse(readFileSync(state, 'utf8')) as {
      tables: { tblhosting: { domain: string; lastupdate?: string; disklimit?: number }[] };
    };
    const updated = saved.tables.tblhosting
      .filter((row) => row.lastupdate !== undefined)
      .map((row) => row.domain);
    assert.deepEqual(updated, ['svc1.example', 'svc2.example']);
  });

  it('lists the accounts for server sync', async () => {
    const listed = (await whmcs('ListAccounts', service(0))).result as {
      success: boolean;
      accounts: { username: string; domain: string; status: string; email: string; product: string }[];
    };
    assert.equal(listed.success, true);
    assert.deepEqual(
      listed.accounts.map((a) => [a.username, a.domain, a.status, a.product]),
      [
        ['svc1', 'svc1.example', 'Active', 'default'],
        ['svc2', 'svc2.example', 'Active', 'default'],
      ],
    );
  });

  /** The token of a single sign-on answer; fails the test unless it is one. */
  function ssoToken(outcome: Outcome): string {
    const result = outcome.result as { success: boolean; redirectTo?: string; errorMsg?: string };
    assert.equal(result.success, true, JSON.stringify(result));
    const shape = new RegExp(
      `^https://[^/]+:${server.ports.customer}/login/sso\\?token=([A-Za-z0-9_-]{43})$`,
    );
    const token = shape.exec(result.redirectTo ?? '')?.[1];
    assert.ok(token, result.redirectTo);
    return token;
  }

  it('logs in to the control panel: the page a link asks for, once, and the URL in no log', async () => {
    const db = server.services.store.db;
    const home = await whmcs('ServiceSingleSignOn', service(1));
    assert.deepEqual(await takeSsoToken(db, ssoToken(home), new Date()), { user: 'svc1', page: 'home' });
    for (const page of PANEL_PAGES) {
      const token = ssoToken(await whmcs('ServiceSingleSignOn', service(1), {}, { app: page }));
      assert.deepEqual(await takeSsoToken(db, token, new Date()), { user: 'svc1', page }, page);
      assert.equal(await takeSsoToken(db, token, new Date()), null, 'once');
    }
    const other = ssoToken(await whmcs('ServiceSingleSignOn', service(1), {}, { app: '../admin' }));
    assert.deepEqual(await takeSsoToken(db, other, new Date()), { user: 'svc1', page: 'home' });
    const token = ssoToken(home);
    assert.deepEqual(
      home.log.map((entry) => entry.action),
      ['create_user_session'],
    );
    assert.ok(!JSON.stringify(home.log).includes(token), 'the URL is in the module log');
    assert.ok(!JSON.stringify(home.log).includes('token='), 'the URL is in the module log');
  });

  it('refuses to log in to a suspended account, saying so', async () => {
    assert.equal((await whmcs('SuspendAccount', service(1, { suspendreason: 'Overdue' }))).result, 'success');
    const refused = (await whmcs('ServiceSingleSignOn', service(1))).result;
    assert.deepEqual(refused, {
      success: false,
      errorMsg: 'The account svc1 is suspended. (account_suspended)',
    });
    assert.equal((await whmcs('UnsuspendAccount', service(1))).result, 'success');
    ssoToken(await whmcs('ServiceSingleSignOn', service(1)));
  });

  it('shows a panel with the control panel’s buttons on the service’s overview', async () => {
    const active = (await whmcs('ClientArea', service(1, { status: 'Active' }))).result as {
      tabOverviewModuleOutputTemplate: string;
      templateVariables: { berthActive: boolean; berthPages: Record<string, string> };
    };
    const template = join(MODULE, active.tabOverviewModuleOutputTemplate);
    assert.ok(existsSync(template), template);
    assert.equal(active.templateVariables.berthActive, true);
    // A button for each page of Berth's panel; "Log in to control panel" opens home.
    assert.deepEqual(
      Object.keys(active.templateVariables.berthPages),
      PANEL_PAGES.filter((page) => page !== 'home'),
    );
    const text = readFileSync(template, 'utf8');
    const link = "clientarea.php?action=productdetails&amp;id={$serviceid|escape:'url'}&amp;dosinglesignon=1";
    assert.ok(text.includes(`href="${link}">Log in to control panel</a>`), 'the login button');
    assert.ok(
      text.includes(`href="${link}&amp;app={$page|escape:'url'}">{$label|escape:'html'}</a>`),
      'a page',
    );
    assert.ok(text.includes('{foreach $berthPages as $page => $label}'));
    const suspended = (await whmcs('ClientArea', service(1, { status: 'Suspended' }))).result as {
      templateVariables: { berthActive: boolean };
    };
    assert.equal(suspended.templateVariables.berthActive, false);
  });

  it('terminates, and a second terminate is no error', async () => {
    assert.equal((await whmcs('TerminateAccount', service(2))).result, 'success');
    assert.equal((await berth('accountsummary', { user: 'svc2' })).status, 400);
    assert.equal((await whmcs('TerminateAccount', service(2))).result, 'success');
  });

  it('works as a reseller: a reseller product, a bound API account, and apiuser/reseller', async () => {
    const reseller = await whmcs(
      'CreateAccount',
      service(10, { producttype: 'reselleraccount', configoption7: '5', configoption8: '10240' }),
    );
    assert.equal(reseller.result, 'success');
    const res = (await berth('accountsummary', { user: 'svc10' })).data.acct as Record<string, unknown>;
    assert.equal((res.reseller as { status: string }).status, 'on');
    await addApiUser(server.services, { name: BOUND.user, password: BOUND.password, reseller: 'svc10' });
    // Under a quota limit an account needs a package with a quota of its own.
    const bound = { serverusername: BOUND.user, serverpassword: BOUND.password, configoption1: 'gold' };
    assert.equal((await whmcs('CreateAccount', service(11, bound))).result, 'success');
    assert.equal((await whmcs('SuspendAccount', service(11, bound))).result, 'success');
    const viaHeader = { serverusername: `${ADMIN.user}/svc10`, configoption1: 'gold' };
    assert.equal((await whmcs('CreateAccount', service(12, viaHeader))).result, 'success');
    for (const user of ['svc11', 'svc12']) {
      const acct = (await berth('accountsummary', { user })).data.acct as Record<string, unknown>;
      assert.equal(acct.owner, 'svc10', user);
    }
    // The reseller sees only its own accounts.
    const listed = (await whmcs('ListAccounts', service(0, bound))).result as {
      accounts: { username: string }[];
    };
    assert.deepEqual(
      listed.accounts.map((a) => a.username),
      ['svc11', 'svc12'],
    );
    const outside = await whmcs('SuspendAccount', service(1, bound));
    assert.match(String(outside.result), /\(account_not_found\)$/);
    // Single sign-on under the reseller: its own accounts only.
    const own = ssoToken(await whmcs('ServiceSingleSignOn', service(12, bound)));
    assert.deepEqual(await takeSsoToken(server.services.store.db, own, new Date()), {
      user: 'svc12',
      page: 'home',
    });
    const other = (await whmcs('ServiceSingleSignOn', service(1, bound))).result as { errorMsg: string };
    assert.match(other.errorMsg, /\(account_not_found\)$/);
  });
});
