// The names no account may claim as a domain (src/core/domain-claims.ts, and add_domain's own rule
// for the fleet's names): the reserved providers' domains, special-use names, public suffixes, and,
// for a holder, any name at, above or under a host name or name server of the fleet's servers; and
// domain_in_use, which names no other account's domain. Each check is made as the holder of the
// account next door would try it, through the customer listener or the administrator acting for it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inspect } from '../../src/operations/maintenance.ts';
import { listAccounts } from '../../src/store/accounts.ts';
import { domainsOf } from '../../src/store/domains.ts';
import { registerServer } from '../../src/store/servers.ts';
import {
  assertRefused,
  callCreateacct,
  createAccount,
  createReseller,
  errorOf,
  type Harness,
  type Reply,
  suiteHarness,
} from '../helpers.ts';

const MALLORY = { user: 'mallory', password: 'mallory-pass-1' };

/** Asserts a refusal on `domain` as 400 invalid_parameter whose sentence matches `reason`. */
function assertInvalidDomain(reply: Reply, reason: RegExp, what: string): void {
  assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'domain' }, what);
  assert.match(reply.body.info, reason, what);
}

/** Every domain of every account, to show that a refusal changed nothing. */
async function allDomains(h: Harness): Promise<string[]> {
  const accounts = await listAccounts(h.services.store.db, null);
  const domains = await Promise.all(accounts.map((a) => domainsOf(h.services.store.db, a.user)));
  return domains.flat().map((d) => d.domain);
}

describe('the reserved domains of big mail and web providers', () => {
  const h = suiteHarness({
    prepare: (h) => createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password }),
  });

  it("a holder cannot park gmail.com, nor add any provider's domain or a name under one", async () => {
    const before = await allDomains(h);
    for (const [domain, type] of [
      ['gmail.com', 'parked'],
      ['GMail.com.', 'addon'],
      ['googlemail.com', 'parked'],
      ['mail.google.com', 'addon'],
      ['outlook.com', 'addon'],
      ['hotmail.com', 'parked'],
      ['yahoo.com', 'parked'],
      ['icloud.com', 'parked'],
      ['gmx.de', 'addon'],
    ] as const) {
      const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type });
      assertInvalidDomain(reply, / and every name under it are reserved \(reserved_domains/, domain);
    }
    const acting = await h.callForHolder('mallory', 'add_domain', { domain: 'gmail.com', type: 'parked' });
    assertInvalidDomain(
      acting,
      /^The parameter domain is invalid: gmail\.com and every name under it/,
      'acting',
    );
    assert.deepEqual(await allDomains(h), before);
  });

  it('createacct refuses them too', async () => {
    for (const domain of ['gmail.com', 'www.yahoo.com']) {
      const reply = await callCreateacct(h, 'taker', { domain });
      assertInvalidDomain(reply, /reserved_domains/, domain);
    }
  });

  it('look-alikes and names that merely end alike are not reserved', async () => {
    for (const domain of ['notgmail.com', 'gmail.com.example']) {
      const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type: 'addon' });
      assert.equal(reply.statusCode, 200, `${domain}: ${JSON.stringify(reply.body)}`);
    }
  });
});

describe('reserved_domains, as the administrator sets it', () => {
  const h = suiteHarness({
    config: { reservedDomains: ['partner.example'] },
    prepare: (h) => createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password }),
  });

  it('replaces the default list: its names are refused, the default ones no longer', async () => {
    assertInvalidDomain(
      await h.callAsHolder(MALLORY, 'add_domain', { domain: 'shop.partner.example', type: 'addon' }),
      /partner\.example and every name under it/,
      'shop.partner.example',
    );
    assertInvalidDomain(
      await callCreateacct(h, 'partner', { domain: 'partner.example' }),
      /reserved/,
      'createacct',
    );
    const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain: 'gmail.com', type: 'addon' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
  });
});

describe('public suffixes and special-use names', () => {
  const h = suiteHarness({
    prepare: (h) => createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password }),
  });

  it('a holder cannot add a public suffix (plain, wildcard or private entry of the list)', async () => {
    const before = await allDomains(h);
    // co.uk and github.io are rules of the list; any name one label under ck is (*.ck).
    // 公司.cn is one too, in punycode as every domain is kept.
    for (const domain of ['co.uk', 'github.io', 'com.au', 'anything.ck', '公司.cn']) {
      for (const type of ['addon', 'parked']) {
        const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type });
        assertInvalidDomain(reply, / is a public suffix, under which others register their names/, domain);
      }
    }
    assert.deepEqual(await allDomains(h), before);
  });

  it('nor a special-use name: .local, .localhost, .invalid, .onion, .arpa, localhost.localdomain', async () => {
    const before = await allDomains(h);
    for (const domain of [
      'printer.local',
      'shop.localhost',
      'bank.invalid',
      'duckduckgogg42xjoc72x3sjasowoarfbgcmvfimaftt6twagswzczad.onion',
      'in-addr.arpa',
      '1.2.0.192.in-addr.arpa',
      'home.arpa',
      'localhost.localdomain',
    ]) {
      const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type: 'parked' });
      assertInvalidDomain(reply, /is a special-use name/, domain);
    }
    assert.deepEqual(await allDomains(h), before);
  });

  it('createacct refuses them too', async () => {
    for (const [domain, reason] of [
      ['co.uk', /public suffix/],
      ['github.io', /public suffix/],
      ['x.local', /special-use/],
      ['localhost.localdomain', /special-use/],
    ] as const)
      assertInvalidDomain(await callCreateacct(h, 'taker', { domain }), reason, domain);
  });

  it('berth doctor finds the list', async () => {
    const found = await inspect(h.services);
    assert.ok(!found.some((line) => line.startsWith('public suffix list')), found.join('\n'));
  });

  it('a name registered under a public suffix is fine, as are .test and .example', async () => {
    for (const domain of ['shop.co.uk', 'mallory.github.io', 'www.ck', 'mallory.test', 'mallory-2.example']) {
      const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type: 'addon' });
      assert.equal(reply.statusCode, 200, `${domain}: ${JSON.stringify(reply.body)}`);
    }
    const made = await callCreateacct(h, 'shopper', { domain: 'shopper.co.uk' });
    assert.equal(made.statusCode, 200, JSON.stringify(made.body));
  });
});

describe('without the public suffix list', () => {
  const h = suiteHarness({
    config: { publicSuffixList: '/nonexistent/public_suffix_list.dat' },
    prepare: (h) => createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password }),
  });

  it('berth doctor says so, and the other rules still hold', async () => {
    assert.ok(
      (await inspect(h.services)).includes(
        "public suffix list: /nonexistent/public_suffix_list.dat is missing (Debian's package publicsuffix, or public_suffix_list): createacct and add_domain cannot refuse public suffixes such as co.uk",
      ),
    );
    assertInvalidDomain(
      await h.callAsHolder(MALLORY, 'add_domain', { domain: 'x.local', type: 'addon' }),
      /special-use/,
      'x.local',
    );
    assertInvalidDomain(
      await h.callAsHolder(MALLORY, 'add_domain', { domain: 'gmail.com', type: 'parked' }),
      /reserved_domains/,
      'gmail.com',
    );
  });
});

describe("the fleet's own names, for a holder", () => {
  const h = suiteHarness({
    config: { hostName: 'panel.example.net', nameservers: ['ns1.panel.example.net', 'ns2.dns-host.example'] },
    prepare: async (h) => {
      await createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password });
      // Another server of the fleet, as it registers itself.
      await registerServer(
        h.services.store.db,
        {
          name: 'web2',
          advertiseUrl: 'https://web2.fleet.example:5555',
          driver: 'record',
          tlsFingerprint: null,
          weight: 1,
          profile: {
            hostName: 'web2.fleet.example',
            sharedIpv4: '192.0.2.2',
            sharedIpv6: '',
            shell: '/bin/bash',
            homeBase: '/home',
            nameservers: ['ns.fleet-dns.example'],
            ipPool: { ipv4: [], ipv6: [], resellerShare: 0.5 },
          },
        },
        new Date(),
      );
    },
  });

  it('refuses a name at, above or under a host name or name server of any server', async () => {
    const before = await allDomains(h);
    for (const [domain, name] of [
      ['example.net', 'panel.example.net'],
      ['dns-host.example', 'ns2.dns-host.example'],
      ['fleet.example', 'web2.fleet.example'],
      ['www.web2.fleet.example', 'web2.fleet.example'],
      ['fleet-dns.example', 'ns.fleet-dns.example'],
      ['ns.fleet-dns.example', 'ns.fleet-dns.example'],
    ] as const) {
      for (const type of ['addon', 'parked']) {
        const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type });
        assertInvalidDomain(
          reply,
          new RegExp(
            `lies under ${name.replaceAll('.', '\\.')}, a host name or name server of the hosting servers`,
          ),
          `${domain} ${type}`,
        );
      }
    }
    assert.deepEqual(await allDomains(h), before);
  });

  it('createacct keeps its rule: the company may host its own site beside its servers', async () => {
    for (const [user, domain] of [
      ['company', 'example.net'],
      ['dnshost', 'dns-host.example'],
      ['fleet', 'fleet.example'],
    ]) {
      // On this server: the fleet's other one is never reached in this test.
      const reply = await callCreateacct(h, user!, {
        domain: domain!,
        password: 'own-site-pass-1',
        server: 'panel',
      });
      assert.equal(reply.statusCode, 200, `${domain}: ${JSON.stringify(reply.body)}`);
    }
    // Not at or under this server's host name or name servers, though.
    assertInvalidDomain(
      await callCreateacct(h, 'taker', { domain: 'x.panel.example.net' }),
      /host name/,
      'host',
    );
    // The company's own account adds a subdomain of its site, not the server's names.
    const own = { user: 'company', password: 'own-site-pass-1' };
    const blog = await h.callAsHolder(own, 'add_domain', { domain: 'blog.example.net', type: 'subdomain' });
    assert.equal(blog.statusCode, 200, JSON.stringify(blog.body));
    assertInvalidDomain(
      await h.callAsHolder(own, 'add_domain', { domain: 'panel.example.net', type: 'subdomain' }),
      /host name/,
      'panel.example.net',
    );
  });
});

describe('domain_in_use, as a neighbour meets it', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createAccount(h, 'admin1', { domain: 'admin1.example' });
      await createAccount(h, 'mallory', { domain: 'mallory.example', password: MALLORY.password });
      await createReseller(h, 'resa', { domain: 'resa.example' });
      const hidden = await h.callForHolder('admin1', 'add_domain', {
        domain: 'secret-admin-7f3k.partner.example',
        type: 'addon',
      });
      assert.equal(hidden.statusCode, 200, JSON.stringify(hidden.body));
    },
  });

  it("names no other account's domain to a holder, whether it lies above, under or is the name", async () => {
    for (const domain of [
      'partner.example',
      'secret-admin-7f3k.partner.example',
      'www.secret-admin-7f3k.partner.example',
    ]) {
      const reply = await h.callAsHolder(MALLORY, 'add_domain', { domain, type: 'addon' });
      assertRefused(reply, 400, 'domain_in_use', 'domain');
      assert.equal(
        reply.body.info,
        `The domain ${domain} is, lies under or lies above a domain of another account.`,
      );
    }
  });

  it('nor to a reseller calling createacct', async () => {
    const reply = await h.callAs('resa', 'createacct', {
      user: 'prober',
      domain: 'partner.example',
      email: 'prober@example.com',
      package: 'default',
    });
    assertRefused(reply, 400, 'domain_in_use', 'domain');
    assert.doesNotMatch(reply.body.info, /secret/);
  });
});
