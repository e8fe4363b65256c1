// Whatever the API's value rules accept, the linux driver can do: valid input never answers 500.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { inspect } from '../../src/operations/maintenance.ts';
import { domainFile } from '../../src/provision/linux/files.ts';
import { errorOf, forSuite } from '../helpers.ts';
import { linuxSetup, nginxAccepts } from './system-root.ts';

/** A label of exactly `n` characters, letters and digits. */
const label = (n: number, c = 'a') => c.repeat(n);

describe('the linux driver accepts what validation accepts', () => {
  const h = forSuite(linuxSetup);

  const create = (user: string, domain: string) =>
    h.call('createacct', { user, domain, email: 'owner@example.org', package: 'default' });

  it('a domain whose last label is one letter', async () => {
    const reply = await create('shorttld', 'a.b');
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    nginxAccepts(h.root);
  });

  it('a 253-character domain, leaving out the records DNS cannot hold', async () => {
    const domain = [label(63, 'a'), label(63, 'b'), label(63, 'c'), label(61, 'd')].join('.');
    assert.equal(domain.length, 253);
    const reply = await create('longname', domain);
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    const zone = readFileSync(join(h.root, 'etc/bind/zones', domainFile(domain, '.db')), 'utf8');
    assert.doesNotMatch(zone, /^www\s/m);
    assert.doesNotMatch(zone, /_domainkey/);
    assert.match(zone, new RegExp(`IN MX 10 ${domain.replaceAll('.', '\\.')}\\.`));
    assert.equal(existsSync(join(h.root, 'etc/berth/dkim', domainFile(domain, '.private'))), false);
    nginxAccepts(h.root);
    assert.deepEqual(await inspect(h.services), []);
    assert.equal((await h.call('removeacct', { user: 'longname' })).statusCode, 200);
  });

  it('refuses, as a taken name, a user name that is a system group', async () => {
    for (const user of ['sudo', 'adm', 'shadow', 'disk', 'staff', 'users']) {
      const reply = await create(user, `${user}.example`);
      assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'user' }, user);
      assert.match(reply.body.info, /already a user or group on the server panel/);
    }
  });

  it('never answers 5xx to valid user names and domains', async () => {
    const user = fc
      .tuple(fc.constantFrom(...'bcdefghijklmnopqrsuvwxyz'), fc.stringMatching(/^[a-z0-9]{0,15}$/))
      .map(([first, rest]) => first + rest);
    const labelArb = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
    const domain = fc
      .tuple(fc.array(labelArb, { minLength: 1, maxLength: 4 }), fc.stringMatching(/^[a-z][a-z0-9]{0,10}$/))
      .map(([labels, tld]) => [...labels, tld].join('.'))
      .filter((name) => name.length <= 253);
    let n = 0;
    await fc.assert(
      fc.asyncProperty(user, domain, async (name, host) => {
        const reply = await create(name, host);
        assert.ok(reply.statusCode < 500, `${name} ${host}: ${JSON.stringify(reply.body)}`);
        if (reply.statusCode === 200) {
          n++;
          assert.equal((await h.call('removeacct', { user: name })).statusCode, 200);
        }
      }),
      { numRuns: 15 },
    );
    assert.ok(n > 0, 'no account was created');
  });
});
