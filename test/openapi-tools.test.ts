// The OpenAPI document as the tools integrators use read it: Redocly's and Spectral's linters find
// no error, and a client generated from it (openapi-typescript + openapi-fetch) type-checks and
// makes real calls over HTTPS against berth serve.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './helpers.ts';
import { berth, type Served, serve } from './process.ts';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

describe('the OpenAPI document in the tools that read it', () => {
  const dataDir = tempDir('berth-openapi-');
  // Inside the repository, so that the generated client resolves openapi-fetch from node_modules.
  const work = join(ROOT, 'test-artifacts', `generated-client-${process.pid}`);
  let server: Served;
  let url: string;
  let ca: string;

  before(async () => {
    server = await serve(dataDir);
    url = `https://localhost:${server.adminPort}`;
    ca = join(dataDir, 'tls', 'cert.pem');
    await berth(['api-user', 'create', 'gen', '--password-stdin', '--data-dir', dataDir], 'gen-password-1');
    rmSync(work, { recursive: true, force: true });
    const { stdout } = await run('curl', ['--silent', '--fail', '--cacert', ca, `${url}/api/openapi.json`]);
    await run('mkdir', ['-p', work]);
    writeFileSync(join(work, 'openapi.json'), stdout);
  });
  after(async () => {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
  });

  it('passes Redocly’s recommended rules with no error or warning', async () => {
    const config = join(ROOT, 'test', 'http', 'lint', 'redocly.yaml');
    const { stdout, stderr } = await run(bin('redocly'), ['lint', '--config', config, 'openapi.json'], {
      cwd: work,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    assert.match(stdout + stderr, /Your API description is valid/);
    assert.doesNotMatch(stdout + stderr, /warning/i);
  });

  it('passes Spectral’s OpenAPI rules with no problem', async () => {
    const ruleset = join(ROOT, 'test', 'http', 'lint', 'spectral.yaml');
    const out = join(work, 'spectral.json');
    await run(bin('spectral'), ['lint', '--ruleset', ruleset, '-f', 'json', '-o', out, 'openapi.json'], {
      cwd: work,
    });
    assert.deepEqual(JSON.parse(readFileSync(out, 'utf8')), []);
  });

  it('gives a generated client typed results that type-check and work against the server', async () => {
    await run(bin('openapi-typescript'), ['openapi.json', '-o', 'schema.d.ts'], { cwd: work });
    copyFileSync(join(ROOT, 'test', 'generated-client', 'calls.ts'), join(work, 'calls.ts'));
    writeFileSync(
      join(work, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2024',
          module: 'nodenext',
          strict: true,
          noEmit: true,
          allowImportingTsExtensions: true,
          types: ['node'],
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        files: ['calls.ts'],
      }),
    );
    // The @ts-expect-error in calls.ts fails this check if the results were untyped.
    await run(bin('tsc'), ['-p', work]);
    const { stdout } = await run(process.execPath, [join(work, 'calls.ts'), url, 'gen', 'gen-password-1'], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: ca },
    });
    assert.deepEqual(JSON.parse(stdout), {
      quota: '750',
      shell: 'off',
      accounts: ['gena'],
      usage: 0,
      code: 'account_not_found',
      status: 400,
      sso: true,
    });
  });
});
