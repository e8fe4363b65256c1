// The fallback certificates, written as DER by Berth: what OpenSSL reads and verifies, strictly
// (key identifiers, a CA that signs servers alone), with every name and address the call gives,
// and the DER under them read back as written.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { contentOf, elements, integer, sequence, time } from '../../src/provision/linux/tls/der.ts';
import { addressBytes, issueFallback, makeFallbackCa } from '../../src/provision/linux/tls/fallback.ts';
import { tempDir } from '../helpers.ts';

const dir = tempDir('berth-fallback-');
const openssl = (...args: string[]) => execFileSync('/usr/bin/openssl', args, { encoding: 'utf8' });

describe('fallback certificates', () => {
  it('verify strictly against the fallback CA, for every name and address given', async () => {
    const ca = await makeFallbackCa('panel.example.net');
    const chain = await issueFallback(ca, ['alice.example', 'www.alice.example', '192.0.2.7', '2001:db8::1']);
    writeFileSync(join(dir, 'ca.pem'), ca.certPem);
    writeFileSync(join(dir, 'chain.pem'), chain);
    assert.equal(
      openssl(
        'verify',
        '-x509_strict',
        '-purpose',
        'sslserver',
        '-CAfile',
        join(dir, 'ca.pem'),
        join(dir, 'chain.pem'),
      ),
      `${join(dir, 'chain.pem')}: OK\n`,
    );
    const leaf = new X509Certificate(chain);
    assert.equal(leaf.subject, 'CN=alice.example');
    assert.equal(leaf.issuer, 'CN=Berth fallback CA panel.example.net');
    assert.equal(
      leaf.subjectAltName,
      'DNS:alice.example, DNS:www.alice.example, IP Address:192.0.2.7, IP Address:2001:DB8:0:0:0:0:0:1',
    );
    assert.equal(leaf.ca, false);
    assert.equal(Math.round((Date.parse(leaf.validTo) - Date.parse(leaf.validFrom)) / 86_400_000), 398);
    const text = openssl('x509', '-in', join(dir, 'ca.pem'), '-noout', '-text');
    assert.match(text, /CA:TRUE, pathlen:0/);
    assert.match(text, /Certificate Sign, CRL Sign/);
    // The chain is the certificate, the CA, then the certificate's own key.
    assert.match(
      chain,
      /^-----BEGIN CERTIFICATE-----\n[\s\S]+-----END CERTIFICATE-----\n-----BEGIN CERTIFICATE-----\n[\s\S]+-----BEGIN PRIVATE KEY-----\n/,
    );
    assert.ok(leaf.checkPrivateKey(createPrivateKey(chain)));
  });

  it('are valid for any names a domain may have, and from dates past 2049', async () => {
    const ca = await makeFallbackCa('panel.example.net', new Date('2049-06-01T00:00:00Z'));
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?$/);
    // A top-level label of letters, as Berth's domains have (1.2.3.4 is an address).
    const top = fc.stringMatching(/^[a-z]{2,10}$/);
    const domain = fc
      .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), top)
      .map(([labels, last]) => [...labels, last].join('.'));
    await fc.assert(
      fc.asyncProperty(fc.array(domain, { minLength: 1, maxLength: 4 }), async (names) => {
        const leaf = new X509Certificate(await issueFallback(ca, names, new Date('2049-12-15T00:00:00Z')));
        assert.equal(leaf.subjectAltName, names.map((name) => `DNS:${name}`).join(', '));
        assert.ok(leaf.verify(new X509Certificate(ca.certPem).publicKey));
        assert.equal(new Date(leaf.validTo).getUTCFullYear(), 2051);
      }),
      { numRuns: 40 },
    );
  });

  it('name a domain past 64 characters in the critical alternative names alone, as RFC 5280 asks', async () => {
    const host = `${'h'.repeat(60)}.example.net`;
    const ca = await makeFallbackCa(host);
    const long = `${'a'.repeat(63)}.${'b'.repeat(20)}.example`;
    const chain = await issueFallback(ca, [long]);
    writeFileSync(join(dir, 'long-ca.pem'), ca.certPem);
    writeFileSync(join(dir, 'long.pem'), chain);
    assert.equal(
      openssl('verify', '-x509_strict', '-CAfile', join(dir, 'long-ca.pem'), join(dir, 'long.pem')),
      `${join(dir, 'long.pem')}: OK\n`,
    );
    const text = openssl('x509', '-in', join(dir, 'long.pem'), '-noout', '-text');
    assert.match(text, /Subject: *\n/);
    assert.match(text, /X509v3 Subject Alternative Name: critical\n\s+DNS:a{63}\.b{20}\.example/);
    const issuer = new X509Certificate(ca.certPem).subject;
    assert.equal(issuer, `CN=${`Berth fallback CA ${host}`.slice(0, 64)}`);
  });

  it('refuse DER that is cut short or runs past its parent, and times X.509 cannot hold', () => {
    for (const bytes of [
      [0x30, 0x82, 0x01],
      [0x30, 0x03, 0x30, 0x84, 0x00],
      [0x30, 0x02, 0x04, 0x03, 0x41, 0x42, 0x43],
    ])
      assert.throws(() => elements(Buffer.from(bytes)), /DER/, Buffer.from(bytes).toString('hex'));
    assert.throws(() => time(new Date('1949-12-31T23:59:59Z')), /no X\.509 time/);
    assert.equal(contentOf(integer(Buffer.alloc(0))).toString('hex'), '00');
  });

  it('write DER lengths, integers and times as X.690 and RFC 5280 ask, and read them back', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 70_000 }), (length) => {
        const content = Buffer.alloc(length, 7);
        const [inner] = elements(sequence(sequence(content)));
        assert.equal(contentOf(inner!).length, length);
      }),
      { numRuns: 60 },
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 2n ** 160n }), (value) => {
        const hex = value.toString(16);
        const bytes = Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
        const encoded = contentOf(integer(Buffer.concat([Buffer.alloc(3), bytes])));
        // Shortest form, and never negative.
        assert.equal(BigInt(`0x${encoded.toString('hex')}`), value);
        assert.ok(encoded[0]! < 0x80);
        assert.ok(encoded.length === 1 || encoded[0] !== 0 || encoded[1]! >= 0x80);
      }),
    );
    assert.equal(time(new Date('2049-12-31T23:59:59Z')).toString('latin1'), '\x17\x0d491231235959Z');
    assert.equal(time(new Date('2050-01-01T00:00:00Z')).toString('latin1'), '\x18\x0f20500101000000Z');
    assert.equal(addressBytes('::ffff:192.0.2.1').toString('hex'), '00000000000000000000ffffc0000201');
    assert.equal(addressBytes('fe80::1:2').toString('hex'), 'fe800000000000000000000000010002');
  });
});
