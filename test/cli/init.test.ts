import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { tempDir } from '../helpers.ts';
import { berth, serve } from '../process.ts';

describe('berth init', () => {
  const parent = tempDir('berth-init-');
  const dataDir = join(parent, 'data');
  after(() => rmSync(parent, { recursive: true, force: true }));

  it('makes the data directory, configuration, certificate and portal password with safe modes', async () => {
    const result = await berth(['init', '--data-dir', dataDir]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Created /);
    assert.match(result.stdout, /Portal password for root[^:]*: \S{20}/);
    const mode = (path: string) => statSync(path).mode & 0o777;
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(join(dataDir, 'berth.toml')), 0o600);
    assert.equal(mode(join(dataDir, 'tls', 'key.pem')), 0o600);
    assert.equal(mode(join(dataDir, 'berth.db')), 0o600);
    assert.match(readFileSync(join(dataDir, 'berth.toml'), 'utf8'), /^# \[linux\]$/m);
  });

  it('leaves what exists as it is, and the server then starts without a new password', async () => {
    const cert = readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8');
    const again = await berth(['init', '--data-dir', dataDir]);
    assert.equal(again.code, 0);
    assert.doesNotMatch(again.stdout, /Portal password|Wrote|Made/);
    assert.equal(readFileSync(join(dataDir, 'tls', 'cert.pem'), 'utf8'), cert);
    const server = await serve(dataDir);
    assert.equal(server.portalPassword, null);
    assert.equal(await server.stop(), 0);
  });

  it('ships a systemd unit that starts berth serve and stops it with SIGTERM', () => {
    const unit = readFileSync(new URL('../../deploy/berth.service', import.meta.url), 'utf8');
    assert.match(
      unit,
      /^ExecStart=\/opt\/berth\/node_modules\/\.bin\/node \/opt\/berth\/bin\/berth\.js serve$/m,
    );
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.match(unit, /^\[Install\]\nWantedBy=multi-user\.target$/m);
  });
});
