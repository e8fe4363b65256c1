import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FILE_KEYS, loadConfig } from '../../src/config/index.ts';
import { SERVE_NODE_FLAGS } from '../../src/config/serve-flags.ts';
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
    assert.match(readFileSync(join(dataDir, 'berth.toml'), 'utf8'), /^\[linux\]$/m);
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

  it('writes every setting with its default, which Berth reads back uncommented', async () => {
    const template = readFileSync(join(dataDir, 'berth.toml'), 'utf8');
    for (const key of FILE_KEYS) {
      const name = key.split('.').at(-1)!;
      assert.match(template, new RegExp(`^# ${name} = `, 'm'), key);
    }
    const uncommented = join(parent, 'uncommented');
    mkdirSync(uncommented);
    writeFileSync(
      join(uncommented, 'berth.toml'),
      template.replace(/^# (?=[a-z_]+ = |\[\[webhooks\]\])/gm, ''),
    );
    const config = loadConfig({ dataDir: uncommented });
    assert.equal(config.database, 'postgres://berth@db.example.net/berth');
    assert.equal(config.webhooks.length, 1);
  });

  it('with --driver linux writes a configuration for the linux stack and says what the system must include', async () => {
    const linuxDir = join(parent, 'linux');
    const root = join(parent, 'root');
    mkdirSync(join(root, 'etc', 'bind'), { recursive: true });
    writeFileSync(
      join(root, 'etc', 'bind', 'named.conf.options'),
      'options {\n  directory "/var/cache/bind";\n};\n',
    );
    const result = await berth(['init', '--driver', 'linux', '--system-root', root, '--data-dir', linuxDir]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(readFileSync(join(linuxDir, 'berth.toml'), 'utf8'), /^driver = "linux"$/m);
    assert.equal(loadConfig({ dataDir: linuxDir }).driver, 'linux');
    assert.match(result.stdout, /BIND: add {2}allow-new-zones yes; {2}to the options/);
    assert.match(result.stdout, /PHP-FPM: Berth starts a master for every account itself/);
    writeFileSync(
      join(root, 'etc', 'bind', 'named.conf.options'),
      'options {\n  directory "/var/cache/bind";\n  allow-new-zones yes;\n};\n',
    );
    rmSync(join(linuxDir, 'berth.toml'));
    const again = await berth(['init', '--driver', 'linux', '--system-root', root, '--data-dir', linuxDir]);
    assert.doesNotMatch(again.stdout, /BIND/);
  });

  it('ships a unit systemd accepts, whose exposure rating is no worse than the docs record', () => {
    const repository = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
    // The unit as installed: /opt/berth is where docs/running.md puts this repository.
    const unit = join(parent, 'berth.service');
    writeFileSync(
      unit,
      readFileSync(new URL('../../deploy/berth.service', import.meta.url), 'utf8').replaceAll(
        '/opt/berth',
        repository,
      ),
    );
    const verify = spawnSync('/usr/bin/systemd-analyze', ['verify', unit], { encoding: 'utf8' });
    assert.equal(verify.status, 0, verify.stderr);
    assert.equal(verify.stderr.trim(), '');
    const security = spawnSync('/usr/bin/systemd-analyze', ['security', '--offline=true', unit], {
      encoding: 'utf8',
    });
    const measured = Number(
      /Overall exposure level for berth\.service: (\d+\.\d)/.exec(security.stdout)?.[1],
    );
    const decisions = readFileSync(new URL('../../docs/decisions.md', import.meta.url), 'utf8');
    const recorded = Number(/rates its exposure \*\*(\d+\.\d)\*\*/.exec(decisions)?.[1]);
    assert.ok(recorded > 0 && measured > 0, security.stdout);
    assert.ok(measured <= recorded, `exposure ${measured}, recorded ${recorded}`);
  });

  it('ships a systemd unit that starts berth serve and stops it with SIGTERM', () => {
    const unit = readFileSync(new URL('../../deploy/berth.service', import.meta.url), 'utf8');
    // With the Node options every start of berth serve has (src/config/serve-flags.ts).
    const execStart = `ExecStart=/opt/berth/node_modules/.bin/node ${SERVE_NODE_FLAGS.join(' ')} /opt/berth/bin/berth.js serve`;
    assert.ok(unit.split('\n').includes(execStart), unit);
    assert.match(unit, /^KillSignal=SIGTERM$/m);
    assert.match(unit, /^\[Install\]\nWantedBy=multi-user\.target$/m);
  });
});
