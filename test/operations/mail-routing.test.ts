// Where mail for a holder's addon or parked domain goes (src/operations/mail-routing.ts): asked of
// a DNS server when the domain is added. The account next door adding a domain whose mail the
// world sends elsewhere (a customer's company, a provider Berth does not list) gets no mail
// domain for it here, so no account's mail to it is kept on this server.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mailRoutingOf } from '../../src/operations/mail-routing.ts';
import { domainsOf } from '../../src/store/domains.ts';
import { dnsServer } from '../dns-server.ts';
import { callCreateacct, suiteHarness } from '../helpers.ts';

/** The harness's server shares 192.0.2.1 (test/helpers.ts). */
const ZONE = new Map([
  ['elsewhere-mail.example', { mx: ['mx.provider.example'], a: ['198.51.100.80'] }],
  ['mx.provider.example', { a: ['198.51.100.25'] }],
  ['here-mail.example', { mx: ['mail.here-mail.example'] }],
  ['mail.here-mail.example', { a: ['192.0.2.1'] }],
  ['web-only.example', { a: ['198.51.100.81'] }],
  ['pointed-here.example', { a: ['192.0.2.1'] }],
  ['v6-mail.example', { mx: ['mx6.v6-mail.example'] }],
  ['mx6.v6-mail.example', { aaaa: ['2001:db8::25'] }],
]);

describe('the mail of a domain a holder adds', () => {
  let dns: Awaited<ReturnType<typeof dnsServer>>;
  const h = suiteHarness({
    prepare: async (h) => {
      await callCreateacct(h, 'alice', { domain: 'alice.example' });
    },
  });
  before(async () => {
    dns = await dnsServer(ZONE);
  });
  after(() => dns.close());
  const routing = (domain: string) => {
    const config = {
      ...h.services.config,
      linux: { ...h.services.config.linux, mailDnsServer: dns.address },
    };
    return mailRoutingOf(config, h.services.fleet.hosting(null), domain, [null, null]);
  };

  it('is elsewhere when its MX, or without MX its address, is another server’s', async () => {
    assert.equal(await routing('elsewhere-mail.example'), 'elsewhere');
    assert.equal(await routing('web-only.example'), 'elsewhere');
    assert.equal(await routing('v6-mail.example'), 'elsewhere');
  });

  it('is here when its MX or address is this server’s, or the DNS has nothing for it yet', async () => {
    assert.equal(await routing('here-mail.example'), 'here');
    assert.equal(await routing('pointed-here.example'), 'here');
    assert.equal(await routing('brand-new.example'), 'here');
  });

  it('is kept with the domain when a holder adds it', async () => {
    h.services.config.linux.mailDnsServer = dns.address;
    for (const [domain, type] of [
      ['elsewhere-mail.example', 'addon'],
      ['web-only.example', 'parked'],
      ['here-mail.example', 'addon'],
    ] as const) {
      const reply = await h.callForHolder('alice', 'add_domain', { domain, type });
      assert.equal(reply.statusCode, 200, `${domain}: ${JSON.stringify(reply.body)}`);
    }
    const kept = Object.fromEntries(
      (await domainsOf(h.services.store.db, 'alice')).map((d) => [d.domain, d.mail ?? 'here']),
    );
    assert.deepEqual(kept, {
      'alice.example': 'here',
      'elsewhere-mail.example': 'elsewhere',
      'web-only.example': 'elsewhere',
      'here-mail.example': 'here',
    });
  });
});
