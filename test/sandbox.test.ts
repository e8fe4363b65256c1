// The whole hosting stack, end to end, in `berth sandbox` (CONTRACT §13), driven only through its
// JSON file, `sandbox exec` and the API, as a billing module's author would: an account's PHP page
// over HTTPS with a certificate Pebble issued through ACME, suspension, passwords, removal; then the
// sandbox stopped, and this machine exactly as before.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { verifySha512Crypt } from '../src/auth/sha512-crypt.ts';
import type { SandboxInfo } from '../src/sandbox/sandbox.ts';
import { tempDir } from './helpers.ts';
import { BERTH, type RunningSandbox, startSandbox } from './process.ts';

/** What must be the same after the sandbox as before: users, homes, the services' configuration. */
function machineState(): string {
  const hash = createHash('sha256');
  const walk = (path: string) => {
    if (!existsSync(path)) return hash.update(`${path} missing\n`);
    const stat = statSync(path);
    hash.update(`${path} ${stat.mode} ${stat.uid}\n`);
    if (stat.isDirectory()) for (const name of readdirSync(path).sort()) walk(join(path, name));
    else if (stat.isFile()) hash.update(readFileSync(path));
  };
  for (const path of [
    '/etc/passwd',
    '/etc/shadow',
    '/etc/group',
    '/home',
    '/etc/nginx',
    '/etc/php',
    '/etc/bind',
    '/etc/berth',
  ])
    walk(path);
  return hash.digest('hex');
}

function curl(args: string[]): { status: number; body: string } {
  try {
    const out = execFileSync('/usr/bin/curl', ['-sS', '--max-time', '10', '-w', '\n%{http_code}', ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const at = out.lastIndexOf('\n');
    return { status: Number(out.slice(at + 1)), body: out.slice(0, at) };
  } catch {
    return { status: 0, body: '' };
  }
}

describe('berth sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  const machineBefore = machineState();
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** A page of a site over HTTPS, verified against Pebble's root only. */
  const site = (domain: string, path = '/') =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      '--cacert',
      sandbox.acme_root_ca,
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  const call = async (operation: string, params: Record<string, string>) => {
    const body = new URLSearchParams({ apiuser: sandbox.api_user, apiauth: sandbox.api_password, ...params });
    const reply = curl(['-k', '--data', body.toString(), `${sandbox.api}api/v1/${operation}/`]);
    return { status: reply.status, body: JSON.parse(reply.body) as { info: string; status: number } };
  };
  const exec = (args: string[]) => running.exec(args);
  /** A shell command run as the account's user, inside the sandbox. */
  const asAlice = async (script: string) => {
    const result = await exec(['/usr/sbin/runuser', '-u', 'alice', '--', '/bin/sh', '-c', script]);
    assert.equal(result.code, 0, result.stderr);
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('serves an account made through the API: PHP as its user, over HTTPS with an ACME certificate', async () => {
    for (const field of [
      'api',
      'reseller_api',
      'api_user',
      'api_password',
      'portal_password',
      'http_port',
      'https_port',
      'dns_port',
      'acme_root_ca',
      'pid',
    ])
      assert.ok(field in sandbox, `the JSON file has ${field}`);
    const started = performance.now();
    const created = await call('createacct', {
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'First-pass-1234',
    });
    const took = performance.now() - started;
    assert.equal(created.body.status, 200, created.body.info);
    assert.ok(took < 3000, `createacct took ${Math.round(took)} ms`);
    // HTTPS serves the site as soon as createacct has answered (an empty public_html: 403), with
    // the fallback certificate or already the ACME one.
    const early = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/`,
    ]);
    assert.equal(early.status, 403);

    await asAlice(
      'echo \'<?php echo "hello from ", posix_getpwuid(posix_geteuid())["name"];\' > /home/alice/public_html/index.php',
    );

    // The ACME certificate arrives after the call: curl verifies it against Pebble's root only.
    let page = site('alice.example');
    for (let i = 0; i < 100 && page.status !== 200; i++) {
      await sleep(200);
      page = site('alice.example');
    }
    assert.equal(page.status, 200, running.output());
    assert.equal(page.body, 'hello from alice');
    assert.equal(site('www.alice.example').body, 'hello from alice');

    const certs = await exec([process.execPath, BERTH, 'certs', '--json', '--data-dir', '/var/lib/berth']);
    const [row] = JSON.parse(certs.stdout) as { state: string; issuer: string }[];
    assert.equal(row?.state, 'valid');
    assert.match(row!.issuer, /Pebble/);

    // PHP is confined to the home (open_basedir) and runs nothing of another account's.
    await asAlice(
      'echo \'<?php var_dump(@file_get_contents("/etc/passwd"));\' > /home/alice/public_html/peek.php',
    );
    const peek = site('alice.example', '/peek.php');
    assert.equal(peek.body.trim(), 'bool(false)');

    // HTTP redirects to HTTPS, but for the challenge path.
    const http = (path: string) =>
      curl([
        '--resolve',
        `alice.example:${sandbox.http_port}:127.0.0.1`,
        '-o',
        '/dev/null',
        `http://alice.example:${sandbox.http_port}${path}`,
      ]);
    assert.equal(http('/').status, 301);
    assert.equal(http('/.well-known/acme-challenge/unknown-token').status, 404);
    // Dotfiles are refused.
    await asAlice('echo secret > /home/alice/public_html/.env');
    assert.equal(site('alice.example', '/.env').status, 403);
    // public_html turned into a link to /etc: nginx serves nothing through it (try_files finds
    // nothing it may follow).
    await asAlice('cd /home/alice && mv public_html site && ln -s /etc public_html');
    try {
      assert.equal(site('alice.example', '/passwd').status, 404);
    } finally {
      await asAlice('cd /home/alice && rm public_html && mv site public_html');
    }
    assert.equal(site('alice.example').status, 200);
  });

  it('suspends (503), unsuspends (200), changes the password, removes every trace', async () => {
    assert.equal((await call('suspendacct', { user: 'alice', reason: 'unpaid' })).body.status, 200);
    assert.equal(site('alice.example').status, 503);
    assert.equal((await call('unsuspendacct', { user: 'alice' })).body.status, 200);
    assert.equal(site('alice.example').status, 200);

    assert.equal((await call('passwd', { user: 'alice', password: 'Second-pass-5678' })).body.status, 200);
    const shadow = (await exec(['/usr/bin/getent', 'shadow', 'alice'])).stdout.split(':')[1]!;
    assert.ok(verifySha512Crypt('Second-pass-5678', shadow));

    assert.equal((await call('removeacct', { user: 'alice' })).body.status, 200);
    assert.equal(site('alice.example').status, 0, 'the site is gone');
    assert.equal((await exec(['/usr/bin/getent', 'passwd', 'alice'])).code, 2);
    assert.equal((await exec(['/usr/bin/test', '-e', '/home/alice'])).code, 1);
    const doctor = await exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth']);
    assert.equal(doctor.code, 0, doctor.stdout);
  });

  it('stops on SIGTERM and leaves this machine as it was', async () => {
    const ended = new Promise<number | null>((resolve) => running.child.once('exit', resolve));
    process.kill(sandbox.pid, 'SIGTERM');
    assert.equal(await ended, 0, running.output());
    assert.equal(machineState(), machineBefore);
    assert.equal(existsSync(join(dataDir, 'sandbox')), false);
    assert.equal(curl([`http://127.0.0.1:${sandbox.http_port}/`]).status, 0, 'nothing listens any more');
  });
});
