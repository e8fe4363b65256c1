// Every domain of an account on the linux driver, in a throwaway system root (CONTRACT §14): an
// addon domain gets its own site serving its docroot through the account's PHP pool, its
// own zone and certificate; a parked domain serves the main site, with its own zone and
// certificate; a subdomain serves its docroot and has its records in its parent's zone. Suspension
// makes every one answer 503, removal removes them all, and a failure undoes every file and row.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type Domain, domainsOf, insertDomain } from '../../src/store/domains.ts';
import { callCreateacct, forSuite } from '../helpers.ts';
import { linuxSetup, nginxAccepts, postfixTable, siteOf } from './system-root.ts';

const at = new Date('2026-04-05T06:07:08.000Z');

/** The domains a holder would add to `user`'s account, beside its main domain `<user>.example`. */
function extraDomains(user: string): Domain[] {
  return [
    {
      domain: `${user}-shop.example`,
      kind: 'addon',
      docroot: `public_html/${user}-shop.example`,
      createdAt: at,
    },
    { domain: `${user}.example.net`, kind: 'parked', docroot: null, createdAt: at },
    { domain: `blog.${user}.example`, kind: 'subdomain', docroot: 'blog', createdAt: at },
  ];
}

/** Every file below a directory (none when it does not exist), by path relative to it. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

describe('the domains of an account on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const site = (domain: string) => siteOf(h.root, domain);
  const zone = (domain: string) => readFileSync(file(`etc/bind/zones/${domain}.db`), 'utf8');

  it('createacct makes a site, a zone and a certificate for each domain, and subdomain records in the parent zone', async () => {
    for (const domain of extraDomains('olga')) await insertDomain(h.services.store.db, 'olga', domain);
    const reply = await callCreateacct(h, 'olga', { domain: 'olga.example', email: 'o@example.org' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));

    assert.deepEqual(
      readdirSync(file('var/www/berth-sites'))
        .filter((f) => f.includes('olga'))
        .sort(),
      [
        'blog.olga.example',
        'olga-shop.example',
        'olga.example',
        'olga.example.net',
        'www.blog.olga.example',
        'www.olga-shop.example',
        'www.olga.example',
        'www.olga.example.net',
      ],
    );
    // Each with its document root, its certificate and the account's own PHP pool, as the main site's.
    assert.deepEqual(site('olga-shop.example'), {
      root: file('home/olga/public_html/olga-shop.example'),
      php: site('olga.example')!.php,
      certificate: file('etc/berth/certs/olga-shop.example/certificate.pem'),
      suspended: false,
    });
    assert.equal(site('olga.example.net')!.root, file('home/olga/public_html'));
    assert.equal(site('blog.olga.example')!.root, file('home/olga/blog'));
    assert.deepEqual(site('www.olga-shop.example'), site('olga-shop.example'));
    nginxAccepts(h.root);

    assert.deepEqual(
      filesUnder(file('etc/bind/zones')).filter((f) => f.includes('olga')),
      ['olga-shop.example.db', 'olga.example.db', 'olga.example.net.db'],
    );
    assert.match(zone('olga.example'), /^blog IN A +127\.0\.0\.1$/m);
    assert.match(zone('olga-shop.example'), /^\$ORIGIN olga-shop\.example\.$/m);
    // The account's DKIM key signs the mail of its addon and parked domains too: each zone has it.
    const key = /default\._domainkey IN TXT \( (.*) \)/.exec(zone('olga.example'))?.[1];
    assert.ok(key);
    for (const domain of ['olga-shop.example', 'olga.example.net'])
      assert.ok(zone(domain).includes(key), domain);
    // Each is a mail domain of its own, delivering to the account's one mailbox.
    const tables = (name: string) => postfixTable(h.root, name);
    for (const domain of ['olga-shop.example', 'olga.example.net']) {
      assert.match(tables('domains'), new RegExp(`^${domain.replaceAll('.', '\\.')} OK$`, 'm'));
      assert.match(
        tables('senders'),
        new RegExp(`^@${domain.replaceAll('.', '\\.')} olga, olga@olga\\.example`, 'm'),
      );
    }
    assert.doesNotMatch(tables('domains'), /blog\.olga\.example/);
    assert.match(
      tables('local-senders'),
      /^olga olga, @olga\.example, @olga-shop\.example, @olga\.example\.net$/m,
    );
    for (const domain of ['olga.example', 'olga-shop.example', 'olga.example.net'])
      assert.ok(existsSync(file(`etc/bind/zones/${domain}.db`)), domain);
    for (const domain of ['olga.example', 'olga-shop.example', 'olga.example.net', 'blog.olga.example'])
      assert.ok(existsSync(file(`etc/berth/certs/${domain}/certificate.pem`)), domain);
  });

  it('suspendacct makes every domain answer 503, unsuspendacct serves them again', async () => {
    const domains = ['olga.example', 'olga-shop.example', 'olga.example.net', 'blog.olga.example'];
    // Every site answers 503 while its suspension file exists.
    assert.equal((await h.call('suspendacct', { user: 'olga', reason: 'unpaid' })).statusCode, 200);
    for (const domain of domains) assert.equal(site(domain)!.suspended, true, domain);
    nginxAccepts(h.root);
    assert.equal((await h.call('unsuspendacct', { user: 'olga' })).statusCode, 200);
    for (const domain of domains) assert.equal(site(domain)!.suspended, false, domain);
  });

  it('removeacct removes the files of every domain, and its rows', async () => {
    assert.equal((await h.call('removeacct', { user: 'olga' })).statusCode, 200);
    for (const dir of ['etc/bind/zones', 'etc/berth/certs', 'var/log/nginx'])
      assert.deepEqual(
        filesUnder(file(dir)).filter((f) => f.includes('olga')),
        [],
        dir,
      );
    assert.deepEqual(
      readdirSync(file('var/www/berth-sites')).filter((f) => f.includes('olga')),
      [],
    );
    assert.deepEqual(
      readdirSync(file('etc/bind/zones')).filter((f) => f.includes('olga')),
      [],
    );
    assert.deepEqual(await domainsOf(h.services.store.db, 'olga'), []);
  });

  it('a failure in a later step undoes the files of every domain and puts the rows back', async () => {
    for (const domain of extraDomains('pia')) await insertDomain(h.services.store.db, 'pia', domain);
    const rows = await domainsOf(h.services.store.db, 'pia');
    const sites = () => readdirSync(file('var/www/berth-sites')).sort();
    const before = [...['etc/bind/zones', 'etc/berth/certs'].map((d) => filesUnder(file(d))), sites()];
    h.failAt.step = 'mail domain';
    try {
      const reply = await callCreateacct(h, 'pia', { domain: 'pia.example', email: 'p@example.org' });
      assert.equal(reply.statusCode, 500, JSON.stringify(reply.body));
    } finally {
      h.failAt.step = null;
    }
    const after = [...['etc/bind/zones', 'etc/berth/certs'].map((d) => filesUnder(file(d))), sites()];
    assert.deepEqual(after, before);
    assert.deepEqual(await domainsOf(h.services.store.db, 'pia'), rows);
  });
});
