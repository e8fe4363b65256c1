import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PORTAL_PASSWORD_FILE, portalPasswordHash } from '../../src/auth/portal-password.ts';
import { verifySha512Crypt } from '../../src/auth/sha512-crypt.js';
import { loadConfig } from '../../src/config/index.ts';
import { Journal } from '../../src/provision/journal.ts';
import { findApiUser } from '../../src/store/api-users.ts';
import { appendAudit } from '../../src/store/audit.ts';
import { openStore } from '../../src/store/open.ts';
import { tempDir } from '../helpers.ts';
import { berth } from '../process.ts';

describe('the berth command line', () => {
  const dataDir = tempDir('berth-cli-');
  const run = (args: string[], input = '') => berth([...args, '--data-dir', dataDir], input);
  before(async () => {
    assert.equal(
      (await run(['api-user', 'create', 'first', '--password-stdin'], 'first-password\n')).code,
      0,
    );
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it('creates API accounts, open or restricted to addresses and ranges, and lists them without hashes', async () => {
    const created = await run(
      [
        'api-user',
        'create',
        'second',
        '--password-stdin',
        '--allow-ip',
        '203.0.113.5',
        '--allow-ip',
        '2001:db8::/48',
      ],
      'second-password',
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /restricted to 203\.0\.113\.5, 2001:db8::\/48/);
    const listed = await run(['api-user', 'list', '--json']);
    const users = JSON.parse(listed.stdout) as { name: string; access: string; allowedIps: string[] }[];
    assert.deepEqual(
      users.map((u) => [u.name, u.access, u.allowedIps]),
      [
        ['first', 'open', []],
        ['second', 'restricted', ['203.0.113.5', '2001:db8::/48']],
      ],
    );
    assert.ok(!listed.stdout.includes('$6$'));
    const table = await run(['api-user', 'list']);
    assert.match(table.stdout, /^NAME\s+ACCESS\s+ALLOWED IPS\s+RESELLER\s+CREATED\s+LAST USED$/m);
  });

  it('stores API passwords only as SHA-512 crypt hashes', async () => {
    const store = await openStore(loadConfig({ dataDir }).dataDir);
    try {
      const user = await findApiUser(store.db, 'first');
      assert.match(user!.passwordHash, /^\$6\$/);
      assert.equal(verifySha512Crypt('first-password', user!.passwordHash), true);
    } finally {
      await store.close();
    }
  });

  it('changes access, resets passwords and deletes API accounts', async () => {
    assert.equal((await run(['api-user', 'set-access', 'second', '--open'])).code, 0);
    assert.equal((await run(['api-user', 'set-access', 'first', '--allow-ip', '10.0.0.0/8'])).code, 0);
    const listed = JSON.parse((await run(['api-user', 'list', '--json'])).stdout) as {
      name: string;
      access: string;
    }[];
    assert.deepEqual(
      listed.map((u) => u.access),
      ['restricted', 'open'],
    );
    assert.equal(
      (await run(['api-user', 'reset-password', 'second', '--password-stdin'], 'third-password\n')).code,
      0,
    );
    assert.equal((await run(['api-user', 'delete', 'second'])).code, 0);
    assert.equal(JSON.parse((await run(['api-user', 'list', '--json'])).stdout).length, 1);
  });

  it('fails with a one-line reason and a non-zero status', async () => {
    for (const [args, input, pattern] of [
      [['api-user', 'create', 'first', '--password-stdin'], 'another-password', /already exists/],
      [['api-user', 'create', 'Bad Name', '--password-stdin'], 'another-password', /name/],
      [['api-user', 'create', 'shorty', '--password-stdin'], 'short', /8 to 128/],
      [
        ['api-user', 'create', 'badip', '--password-stdin', '--allow-ip', '300.1.1.1'],
        'long-enough-1',
        /not an IPv4 or IPv6/,
      ],
      [
        ['api-user', 'create', 'boundbad', '--password-stdin', '--reseller', 'nobody1'],
        'long-enough-1',
        /not a reseller/,
      ],
      [['api-user', 'delete', 'ghost'], '', /no API user named ghost/],
      [['package', 'delete', 'ghost'], '', /No package named ghost/],
    ] as [string[], string, RegExp][]) {
      const result = await run(args, input);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, pattern);
      assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    }
  });

  it('doctor follows the configured driver: with record it checks the store and the journal', async () => {
    const clean = await run(['doctor']);
    assert.equal(clean.code, 0, clean.stderr);
    assert.match(clean.stdout, /No difference between the store and the system/);
    const journal = new Journal(dataDir);
    const id = journal.begin({
      user: 'carol',
      domain: 'carol.example',
      homedir: '/home/carol',
      operation: 'createacct',
      startedAt: '2026-11-21T10:00:00.000Z',
    });
    try {
      const interrupted = await run(['doctor']);
      assert.equal(interrupted.code, 1);
      assert.equal(
        interrupted.stdout,
        'carol: "createacct" was interrupted (2026-11-21T10:00:00.000Z); serve finishes it when it starts\n',
      );
    } finally {
      journal.end(id);
    }
  });

  it('answers usage errors with status 2', async () => {
    for (const args of [
      ['frobnicate'],
      ['api-user', 'create', 'x1'],
      ['api-user', 'set-access', 'first'],
      ['--bogus-flag'],
    ]) {
      const result = await run(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /^berth: /);
    }
  });

  it('adds, lists and deletes packages through the same operations as the API', async () => {
    const added = await run([
      'package',
      'add',
      'Gold',
      '--quota',
      '1000',
      '--email-accounts',
      '50',
      '--shell',
      'on',
    ]);
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /Package Gold created/);
    const listed = JSON.parse((await run(['package', 'list', '--json'])).stdout) as {
      name: string;
      limits: { quota: number; email_accounts: number };
    }[];
    const gold = listed.find((p) => p.name === 'Gold');
    assert.deepEqual([gold?.limits.quota, gold?.limits.email_accounts], [1000, 50]);
    assert.match((await run(['package', 'list'])).stdout, /^Gold\s+1000\s+unlimited\s+default\s+on/m);
    const bad = await run(['package', 'add', 'Bad', '--quota', 'lots']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /quota/);
    assert.equal((await run(['package', 'delete', 'Gold'])).code, 0);
    const audit = JSON.parse((await run(['audit', '--json'])).stdout) as {
      operation: string;
      address: string;
    }[];
    assert.deepEqual(
      audit.slice(0, 3).map((e) => [e.operation, e.address]),
      [
        ['killpkg', 'cli'],
        ['addpkg', 'cli'],
        ['addpkg', 'cli'],
      ],
    );
  });

  it('sets the portal password, and removes the file a generated one was left in', async () => {
    const generated = join(dataDir, PORTAL_PASSWORD_FILE);
    writeFileSync(generated, 'generated-password\n', { mode: 0o600 });
    assert.equal((await run(['admin', 'set-password', '--password-stdin'], 'portal-password-1\n')).code, 0);
    assert.equal(existsSync(generated), false);
    const store = await openStore(dataDir);
    try {
      assert.equal(verifySha512Crypt('portal-password-1', (await portalPasswordHash(store.db))!), true);
    } finally {
      await store.close();
    }
  });

  it('prints the audit log with control characters escaped, whatever a row holds', async () => {
    const store = await openStore(dataDir);
    try {
      await appendAudit(store.db, {
        at: new Date().toISOString(),
        api_user: 'old\u001b[2Jrow\nforged',
        reseller: null,
        address: '192.0.2.1',
        operation: 'passwd',
        target: null,
        status: 403,
        code: 'forbidden',
      });
    } finally {
      await store.close();
    }
    const printed = await run(['audit', '--limit', '1']);
    assert.equal(printed.code, 0, printed.stderr);
    assert.ok(!printed.stdout.includes('\u001b'));
    assert.match(printed.stdout, /old\\x1b\[2Jrow\\x0aforged/);
    assert.equal(printed.stdout.trim().split('\n').length, 2);
  });

  it('audits every change to API accounts and to the portal password, refusals included', async () => {
    const steps: [string[], string][] = [
      [['api-user', 'create', 'audited', '--password-stdin'], 'audited-password\n'],
      [['api-user', 'create', 'audited', '--password-stdin'], 'audited-password\n'],
      [['api-user', 'reset-password', 'audited', '--password-stdin'], 'audited-password-2\n'],
      [['api-user', 'set-access', 'audited', '--allow-ip', '192.0.2.1'], ''],
      [['api-user', 'delete', 'audited'], ''],
      [['admin', 'set-password', '--password-stdin'], 'portal-password-2\n'],
    ];
    for (const [args, input] of steps) await run(args, input);
    const printed = await run(['audit', '--json', '--limit', '6']);
    const entries = (JSON.parse(printed.stdout) as Record<string, unknown>[]).reverse();
    assert.deepEqual(
      entries.map((e) => [e.api_user, e.address, e.operation, e.target, e.status, e.code]),
      [
        ['root', 'cli', 'api-user create', 'audited', 200, null],
        ['root', 'cli', 'api-user create', 'audited', 400, 'invalid_parameter'],
        ['root', 'cli', 'api-user reset-password', 'audited', 200, null],
        ['root', 'cli', 'api-user set-access', 'audited', 200, null],
        ['root', 'cli', 'api-user delete', 'audited', 200, null],
        ['root', 'cli', 'admin set-password', null, 200, null],
      ],
    );
    assert.ok(!printed.stdout.includes('audited-password'), 'a password reached the audit log');
  });
});
