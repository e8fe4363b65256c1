// The customer listener of `berth sandbox` (CONTRACT §13, §14), used as a holder would: over HTTPS
// at `customer_api`, with the account's password and then an API token; its own password changed
// there is the one its SSH login takes; suspension shuts it out, and the account next door's
// password opens nothing.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxSsh,
  sandboxWithAccounts,
} from '../process.ts';

describe('the sandbox’s customer listener', () => {
  const dataDir = tempDir('berth-customer-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** A call of the customer API with Basic credentials or a token. */
  const holder = (
    credentials: { user: string; password: string } | { token: string },
    operation: string,
    params: Record<string, string> = {},
  ) => sandboxHolderCall(sandbox, credentials, operation, params);
  const basic = (user: string, password: string) => ({ user, password });

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
  });
  after(() => running?.stop());

  it('serves the holder’s API over HTTPS at customer_api, with the account’s password', async () => {
    assert.match(sandbox.customer_api, /^https:\/\/127\.0\.0\.1:[0-9]+\/$/);
    const info = await holder(basic('alice', 'Alice-pass-1234'), 'account_info');
    assert.equal(info.status, 200, info.body.info);
    assert.equal((info.body.data as { domain: string }).domain, 'alice.example');
    assert.equal((await holder(basic('alice', 'Bob-pass-1234'), 'account_info')).status, 403);
  });

  it('refuses, on the sites’ addresses, every name no account has: none reaches an account’s site', async () => {
    for (const name of ['sandbox.test', 'nobody.example', 'localhost']) {
      const https = curl([
        '--resolve',
        `${name}:${sandbox.https_port}:127.0.0.1`,
        '-k',
        `https://${name}:${sandbox.https_port}/`,
      ]);
      assert.equal(https.status, 0, `${name}: ${https.body}`);
      const http = curl([
        '--resolve',
        `${name}:${sandbox.http_port}:127.0.0.1`,
        `http://${name}:${sandbox.http_port}/`,
      ]);
      assert.equal(http.status, 0, `${name}: ${http.body}`);
    }
    const site = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/`,
    ]);
    assert.notEqual(site.status, 0);
  });

  it('changes the password the account’s SSH login takes; the old one stops working everywhere', async () => {
    const changed = await holder(basic('bob', 'Bob-pass-1234'), 'change_password', {
      current_password: 'Bob-pass-1234',
      password: 'Bob-new-pass-987',
    });
    assert.equal(changed.status, 200, changed.body.info);
    const ssh = sandboxSsh(sandbox, 'ssh', 'bob', 'Bob-new-pass-987', ['echo', 'in']);
    assert.equal(ssh.stdout.trim(), 'in', ssh.stderr);
    assert.notEqual(sandboxSsh(sandbox, 'ssh', 'bob', 'Bob-pass-1234', ['echo', 'in']).code, 0);
    assert.equal((await holder(basic('bob', 'Bob-pass-1234'), 'account_info')).status, 403);
  });

  it('takes an API token as Bearer until the account is suspended', async () => {
    const made = await holder(basic('alice', 'Alice-pass-1234'), 'add_token', { name: 'deploy' });
    assert.equal(made.status, 200, made.body.info);
    const { token } = made.body.data as { token: string };
    assert.equal((await holder({ token }, 'account_info')).status, 200);
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'unpaid' })).status,
      200,
    );
    const refused = await holder({ token }, 'account_info');
    assert.equal(refused.status, 403);
    assert.equal((refused.body.data as { code: string }).code, 'account_suspended');
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' })).status, 200);
    assert.equal((await holder({ token }, 'account_info')).status, 200);
  });
});
