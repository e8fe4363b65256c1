// `berth serve --driver linux --system-root DIR` driven over HTTPS through a whole lifecycle, with
// `berth doctor` finding no difference at each step.
import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { verifySha512Crypt } from '../../src/auth/sha512-crypt.js';
import { findSystemUser, shadowPassword } from '../../src/provision/linux/passwd.ts';
import { FORM, tempDir } from '../helpers.ts';
import { berth, post, type Served, serve } from '../process.ts';
import { makeSystemRoot, nginxAccepts } from './system-root.ts';

describe('berth serve with the linux driver', () => {
  const dataDir = tempDir('berth-linux-e2e-');
  const root = makeSystemRoot();
  let server: Served;
  const call = async (op: string, params: string) => {
    const reply = await post(dataDir, server.adminPort, `/api/v1/${op}/`, {
      headers: FORM,
      body: `apiuser=ops&apiauth=ops-password-1&${params}`,
    });
    assert.equal(reply.status, 200, reply.body);
    return reply;
  };
  const doctor = async () => {
    const result = await berth(['doctor', '--driver', 'linux', '--system-root', root, '--data-dir', dataDir]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /No difference between the store and the system/);
  };

  before(async () => {
    writeFileSync(
      join(dataDir, 'berth.toml'),
      [
        'host_name = "panel.example.net"',
        'shared_ipv4 = "127.0.0.1"',
        'shared_ipv6 = ""',
        '[linux]',
        `http_port = ${19080 + (process.pid % 500)}`,
        '',
      ].join('\n'),
    );
    server = await serve(dataDir, ['--driver', 'linux', '--system-root', root]);
    const created = await berth(
      ['api-user', 'create', 'ops', '--password-stdin', '--data-dir', dataDir],
      'ops-password-1',
    );
    assert.equal(created.code, 0, created.stderr);
  });
  after(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(root, { recursive: true, force: true });
  });

  it('creates, changes, suspends and removes a real account, leaving exactly the files each step needs', async () => {
    await call('addpkg', 'name=gold&shell=on&quota=2000');
    await call(
      'createacct',
      'user=frank&domain=frank.example&email=f%40example.com&package=default&password=Frank-pass-1',
    );
    assert.equal(findSystemUser(root, 'frank')?.home, '/home/frank');
    assert.ok(existsSync(join(root, 'home/frank/public_html')));
    nginxAccepts(root);
    await doctor();

    await call('passwd', 'user=frank&password=Frank-pass-2');
    assert.equal(verifySha512Crypt('Frank-pass-2', shadowPassword(root, 'frank')!), true);
    await call('suspendacct', 'user=frank&reason=Unpaid');
    assert.match(shadowPassword(root, 'frank')!, /^!/);
    assert.ok(existsSync(join(root, 'var/www/berth-sites/frank.example/suspended')), 'its sites answer 503');
    await doctor();
    await call('unsuspendacct', 'user=frank');
    await call('editquota', 'user=frank&quota=300');
    await call('changepackage', 'user=frank&package=gold');
    assert.equal(findSystemUser(root, 'frank')?.shell, '/etc/berth/confine');
    nginxAccepts(root);
    await doctor();

    await call('removeacct', 'user=frank');
    assert.equal(findSystemUser(root, 'frank'), undefined);
    for (const path of [
      'home/frank',
      'var/www/berth-sites/frank.example',
      'etc/bind/zones/frank.example.db',
      'etc/berth/dkim/frank.example.private',
    ]) {
      assert.equal(existsSync(join(root, path)), false, path);
    }
    await doctor();
  });

  it('doctor reports a difference with a non-zero status', async () => {
    await call('createacct', 'user=gina&domain=gina.example&email=g%40example.com&package=default');
    rmSync(join(root, 'var/www/berth-sites/gina.example'), { recursive: true });
    const result = await berth(['doctor', '--driver', 'linux', '--system-root', root, '--data-dir', dataDir]);
    assert.equal(result.code, 1);
    assert.equal(result.stdout, 'gina: no site directory /var/www/berth-sites/gina.example\n');
  });
});
