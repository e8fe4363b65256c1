// add_domain and remove_domain (CONTRACT §14) on the linux driver, in a throwaway system root,
// called as the administrator acting for the holder: each kind of domain gets what it serves with
// (site, document root, zone or records in its parent's, certificate, mail domain), removal takes
// it away, a document root through a link the account planted is refused and changes nothing, a
// failing step undoes the rest, doctor knows every domain, and recovery after a crash removes what
// an interrupted add left.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { ApiError } from '../../src/core/errors.ts';
import { inspect, recoverInterruptedCalls } from '../../src/operations/maintenance.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { domainsOf } from '../../src/store/domains.ts';
import { objectsByUser } from '../../src/store/objects.ts';
import { dnsServer } from '../dns-server.ts';
import { callForHolder, createAccount, forSuite, refused } from '../helpers.ts';
import { dovecotRows, linuxSetup, nginxAccepts, postfixTable, siteOf } from './system-root.ts';

describe('domains added and removed by the holder on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const siteRoot = (domain: string) => siteOf(h.root, domain)?.root;
  const zone = (domain: string) => read(`etc/bind/zones/${domain}.db`);
  const table = (name: string) => postfixTable(h.root, name);
  const add = (params: Record<string, string>) => callForHolder(h, 'uma', 'add_domain', params);
  const remove = (domain: string) => callForHolder(h, 'uma', 'remove_domain', { domain });
  /** What add_domain refused with, as code and parameter. */
  const refusedWith = async (promise: Promise<unknown>) => {
    const { code, param } = await refused(promise);
    return [code, param];
  };
  /** Every file a domain could have, and whether each is there. */
  const traces = (domain: string) =>
    [
      `var/www/berth-sites/${domain}`,
      `var/www/berth-sites/www.${domain}`,
      `etc/bind/zones/${domain}.db`,
      `etc/berth/certs/${domain}/certificate.pem`,
      `etc/berth/mail/${domain}.json`,
      // Its site's logs, which the next holder of the name must not read.
      `var/log/nginx/${domain}`,
    ].filter((path) => existsSync(file(path)));

  it('an addon domain gets its document root, site, zone, certificate and mail domain', async () => {
    await createAccount(h, 'uma', { domain: 'uma.example' });
    const reply = await add({ domain: 'uma-shop.example', type: 'addon' });
    assert.equal((reply.data as { docroot: string }).docroot, 'public_html/uma-shop.example');
    const root = statSync(file('home/uma/public_html/uma-shop.example'));
    const uma = findSystemUser(h.root, 'uma')!;
    const web = findSystemUser(h.root, 'www-data')!;
    assert.deepEqual([root.uid, root.gid, root.mode & 0o777], [uma.uid, web.gid, 0o750]);
    assert.equal(siteRoot('uma-shop.example'), file('home/uma/public_html/uma-shop.example'));
    assert.match(zone('uma-shop.example'), /^\$ORIGIN uma-shop\.example\.$/m);
    assert.match(zone('uma-shop.example'), /default\._domainkey IN TXT/);
    assert.ok(existsSync(file('etc/berth/certs/uma-shop.example/certificate.pem')));
    assert.match(table('domains'), /^uma-shop\.example OK$/m);
    assert.match(table('mailboxes'), /^uma@uma-shop\.example OK$/m);
    assert.equal(traces('uma-shop.example').length, 6);
    assert.match(
      read('etc/opendkim/berth/signing'),
      /^\*@uma-shop\.example default\._domainkey\.uma-shop\.example$/m,
    );
    nginxAccepts(h.root);
  });

  it('an addon domain whose mail the DNS sends to another server gets its site, zone and certificate, no mail domain', async () => {
    const dns = await dnsServer(
      new Map([
        ['uma-corp.example', { mx: ['mx.elsewhere.example'] }],
        ['mx.elsewhere.example', { a: ['198.51.100.25'] }],
      ]),
    );
    h.services.config.linux.mailDnsServer = dns.address;
    try {
      await add({ domain: 'uma-corp.example', type: 'addon' });
    } finally {
      h.services.config.linux.mailDnsServer = '';
      dns.close();
    }
    assert.deepEqual(traces('uma-corp.example'), [
      'var/www/berth-sites/uma-corp.example',
      'var/www/berth-sites/www.uma-corp.example',
      'etc/bind/zones/uma-corp.example.db',
      'etc/berth/certs/uma-corp.example/certificate.pem',
      'var/log/nginx/uma-corp.example',
    ]);
    assert.doesNotMatch(table('domains'), /uma-corp/);
    assert.doesNotMatch(table('mailboxes'), /uma-corp/);
    assert.deepEqual(await inspect(h.services), []);
    await remove('uma-corp.example');
    assert.deepEqual(traces('uma-corp.example'), []);
  });

  it('a parked domain serves the main site, with its own zone, certificate and mail domain', async () => {
    await add({ domain: 'uma.example.net', type: 'parked' });
    assert.equal(siteRoot('uma.example.net'), file('home/uma/public_html'));
    assert.match(zone('uma.example.net'), /^\$ORIGIN uma\.example\.net\.$/m);
    assert.ok(existsSync(file('etc/berth/certs/uma.example.net/certificate.pem')));
    assert.match(table('domains'), /^uma\.example\.net OK$/m);
  });

  it("a subdomain gets records in its parent's zone, its document root, site and certificate", async () => {
    await h.services.store.db
      .updateTable('accounts')
      .set({ subdomains: null })
      .where('user', '=', 'uma')
      .execute();
    await add({ domain: 'blog.uma.example', type: 'subdomain', docroot: 'sites/blog' });
    assert.match(zone('uma.example'), /^blog IN A +127\.0\.0\.1$/m);
    assert.match(zone('uma.example'), /^www\.blog IN CNAME blog$/m);
    // Its parent keeps its DKIM key: the zone was rewritten whole.
    assert.match(zone('uma.example'), /default\._domainkey IN TXT/);
    assert.equal(existsSync(file('etc/bind/zones/blog.uma.example.db')), false);
    assert.ok(statSync(file('home/uma/sites/blog')).isDirectory());
    assert.equal(siteRoot('blog.uma.example'), file('home/uma/sites/blog'));
    assert.ok(existsSync(file('etc/berth/certs/blog.uma.example/certificate.pem')));
    assert.doesNotMatch(table('domains'), /blog\.uma\.example/);
    await add({ domain: 'news.uma-shop.example', type: 'subdomain' });
    assert.match(zone('uma-shop.example'), /^news IN A +127\.0\.0\.1$/m);
    nginxAccepts(h.root);
  });

  it('doctor knows every domain: none is a stray file, none is missing; berth certs lists each', async () => {
    assert.deepEqual(await inspect(h.services), []);
    const { db } = h.services.store;
    const rows = h.services.driver.certificates!([(await findAccount(db, 'uma'))!], await objectsByUser(db));
    assert.deepEqual(
      rows.map((row) => [row.domain, row.state]),
      ['uma.example', 'uma-shop.example', 'uma.example.net', 'blog.uma.example', 'news.uma-shop.example'].map(
        (domain) => [domain, 'fallback'],
      ),
    );
  });

  it('suspension makes every added domain answer 503 and keeps its mail domain', async () => {
    await h.call('suspendacct', { user: 'uma', reason: 'unpaid' });
    for (const domain of ['uma-shop.example', 'uma.example.net', 'blog.uma.example'])
      assert.equal(siteOf(h.root, domain)?.suspended, true, domain);
    // Its logins are out of Dovecot's table; Postfix's senders table is left as it was.
    assert.match(table('senders'), /^@uma-shop\.example uma, uma@uma\.example/m);
    assert.doesNotMatch(dovecotRows(h.root, 'logins'), /uma/);
    await h.call('unsuspendacct', { user: 'uma' });
    assert.match(dovecotRows(h.root, 'logins'), /^uma@uma-shop\.example\t/m);
    assert.match(table('senders'), /^@uma-shop\.example uma, uma@uma\.example/m);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('a document root through a link the account planted is refused, and nothing is made', async () => {
    mkdirSync(file('home/uma/public_html/inner'));
    symlinkSync('/etc', file('home/uma/public_html/planted'));
    for (const docroot of ['public_html/planted', 'public_html/planted/site']) {
      assert.deepEqual(await refusedWith(add({ domain: 'uma-evil.example', type: 'addon', docroot })), [
        'invalid_parameter',
        'docroot',
      ]);
    }
    assert.equal(existsSync(file('etc/site')), false);
    assert.deepEqual(traces('uma-evil.example'), []);
    assert.equal(
      (await domainsOf(h.services.store.db, 'uma')).some((d) => d.domain === 'uma-evil.example'),
      false,
    );
  });

  it('a failing step undoes the files of the new domain and its row', async () => {
    h.failAt.step = 'DNS zone check for uma-fail.example';
    try {
      const error = await add({ domain: 'uma-fail.example', type: 'addon', docroot: 'fail/site' }).catch(
        (e) => e,
      );
      assert.equal((error as ApiError).code, 'provisioning_failed');
    } finally {
      h.failAt.step = null;
    }
    assert.deepEqual(traces('uma-fail.example'), []);
    assert.equal(existsSync(file('home/uma/fail')), false);
    assert.doesNotMatch(table('domains'), /uma-fail/);
    assert.equal(
      (await domainsOf(h.services.store.db, 'uma')).some((d) => d.domain === 'uma-fail.example'),
      false,
    );
  });

  it('remove_domain takes a subdomain out of its parent zone, and a domain with all it had', async () => {
    await remove('blog.uma.example');
    assert.doesNotMatch(zone('uma.example'), /^blog /m);
    assert.deepEqual(traces('blog.uma.example'), []);
    // The holder's files stay.
    assert.ok(existsSync(file('home/uma/sites/blog')));
    await remove('news.uma-shop.example');
    await remove('uma-shop.example');
    await remove('uma.example.net');
    for (const domain of ['uma-shop.example', 'uma.example.net']) {
      assert.deepEqual(traces(domain), [], domain);
      assert.doesNotMatch(table('domains'), new RegExp(domain.replaceAll('.', '\\.')));
    }
    assert.deepEqual(await inspect(h.services), []);
    nginxAccepts(h.root);
  });

  it('recovery after a crash in the middle of an add removes what the add had made', async () => {
    await add({ domain: 'uma-crash.example', type: 'addon' });
    // As if the process had died with the add's steps done and its row not yet kept: the store
    // has no such domain, the journal names it.
    await h.services.store.db.deleteFrom('domains').where('domain', '=', 'uma-crash.example').execute();
    h.services.journal.begin({
      user: 'uma',
      domain: 'uma.example',
      homedir: '/home/uma',
      operation: 'document root for uma-crash.example',
      startedAt: new Date().toISOString(),
      domains: ['uma-crash.example'],
    });
    assert.deepEqual(await recoverInterruptedCalls(h.services), [
      'uma: repaired to match the store after an interrupted "document root for uma-crash.example"',
    ]);
    assert.deepEqual(traces('uma-crash.example'), []);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('removeacct removes every added domain with the account', async () => {
    await add({ domain: 'uma-last.example', type: 'addon' });
    await add({ domain: 'uma.example.org', type: 'parked' });
    assert.equal((await h.call('removeacct', { user: 'uma' })).statusCode, 200);
    for (const domain of ['uma-last.example', 'uma.example.org', 'uma.example'])
      assert.deepEqual(traces(domain), [], domain);
    assert.equal(table('domains').includes('uma'), false);
    assert.deepEqual(await inspect(h.services), []);
  });
});
