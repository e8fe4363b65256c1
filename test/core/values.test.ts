import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { domainToASCII, domainToUnicode } from 'node:url';
import fc from 'fast-check';
import { ApiError } from '../../src/core/errors.ts';
import {
  formatLimit,
  hasControlCharacters,
  MAX_LIMIT,
  parseAddressRange,
  parseDomain,
  parseEmail,
  parseLimit,
  parsePackageName,
  parsePassword,
  parseSwitch,
  parseUser,
  RESERVED_USERS,
  SYSTEM_PACKAGE_USERS,
} from '../../src/core/values.ts';

const HOST = 'panel.example.net';
const SERVER = { hostName: HOST, nameservers: [`ns1.${HOST}`, 'ns2.dns-host.example'] };

function refuses(fn: () => unknown, param: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ApiError);
    assert.equal(error.code, 'invalid_parameter');
    assert.equal(error.param, param);
    return true;
  });
}

const lower = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz');
const alnum = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789');
const label = fc
  .tuple(
    alnum,
    fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), { maxLength: 20 }),
    alnum,
  )
  .map(([a, middle, b]) => `${a}${middle.join('')}${b}`);
const tld = fc.array(lower, { minLength: 2, maxLength: 6 }).map((letters) => letters.join(''));
const domain = fc
  .tuple(fc.array(label, { minLength: 1, maxLength: 3 }), tld)
  .map(([labels, top]) => [...labels, top].join('.'));

describe('limits', () => {
  it('accept every whole number from 0 to 2147483647 and write it back in canonical digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_LIMIT }), fc.nat({ max: 5 }), (n, zeros) => {
        const parsed = parseLimit('quota', '0'.repeat(zeros) + String(n));
        assert.equal(parsed, n);
        assert.equal(formatLimit(parsed), String(n));
      }),
    );
  });

  it('read "unlimited" in any case as unlimited, and 0 as zero', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), (upper) => {
        const word = [...'unlimited'].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
        assert.equal(parseLimit('quota', word), null);
      }),
    );
    assert.equal(parseLimit('quota', '0'), 0);
    assert.equal(formatLimit(null), 'unlimited');
  });

  it('refuse numbers above 2147483647, negatives, fractions and words', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: BigInt(MAX_LIMIT) + 1n, max: 10n ** 30n }), (n) => {
        refuses(() => parseLimit('quota', n.toString()), 'quota');
      }),
    );
    for (const bad of ['-1', '1.5', '1e3', ' 5', 'five', '0x10', 'unlimitedd', '+3']) {
      refuses(() => parseLimit('bandwidth', bad), 'bandwidth');
    }
  });
});

describe('switches', () => {
  it('read on/off, 1/0, yes/no, true/false in any case', () => {
    const words = fc.constantFrom('on', '1', 'yes', 'true', 'off', '0', 'no', 'false');
    fc.assert(
      fc.property(words, fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }), (word, upper) => {
        const cased = [...word].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join('');
        assert.equal(parseSwitch('dkim', cased), ['on', '1', 'yes', 'true'].includes(word));
      }),
    );
  });

  it('refuse anything else', () => {
    fc.assert(
      fc.property(fc.string(), (word) => {
        fc.pre(!['on', '1', 'yes', 'true', 'off', '0', 'no', 'false'].includes(word.toLowerCase()));
        refuses(() => parseSwitch('spf', word), 'spf');
      }),
    );
  });
});

describe('user names', () => {
  it('accept 1 to 16 lower-case letters and digits starting with a letter', () => {
    const name = fc
      .tuple(lower, fc.array(alnum, { maxLength: 15 }))
      .map(([first, rest]) => first + rest.join(''))
      .filter(
        (n) =>
          !n.startsWith('test') &&
          !RESERVED_USERS.has(n) &&
          !SYSTEM_PACKAGE_USERS.has(n) &&
          !n.startsWith('systemd'),
      );
    fc.assert(fc.property(name, (n) => assert.equal(parseUser('user', n), n)));
  });

  it('refuse upper case (not folded), other characters, and names over 16 long', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 40 }), (n) => {
        fc.pre(!/^[a-z][a-z0-9]{0,15}$/.test(n));
        refuses(() => parseUser('user', n), 'user');
      }),
    );
    refuses(() => parseUser('user', 'Alice'), 'user');
    refuses(() => parseUser('user', 'a'.repeat(17)), 'user');
  });

  it('refuse names starting with test and reserved names', () => {
    refuses(() => parseUser('user', 'test'), 'user');
    refuses(() => parseUser('user', 'testing1'), 'user');
    for (const name of RESERVED_USERS) refuses(() => parseUser('user', name), 'user');
  });

  it('refuse the names a system package may claim later, and every name beginning systemd', () => {
    for (const name of [
      'crontab',
      'systemd',
      'messagebus',
      'polkitd',
      'postfix',
      'dovecot',
      'opendkim',
      'bind',
    ])
      refuses(() => parseUser('user', name), 'user');
    refuses(() => parseUser('user', 'pebble'), 'user');
    const systemdNames = fc.array(alnum, { maxLength: 9 }).map((rest) => `systemd${rest.join('')}`);
    fc.assert(fc.property(systemdNames, (n) => refuses(() => parseUser('user', n), 'user')));
  });
});

describe('domains', () => {
  it('accept well-formed names, lower-cased, with a trailing dot dropped', () => {
    fc.assert(
      fc.property(domain, fc.boolean(), fc.boolean(), (d, upper, dot) => {
        fc.pre(d.length <= 253);
        const raw = (upper ? d.toUpperCase() : d) + (dot ? '.' : '');
        assert.equal(parseDomain('domain', raw, SERVER), d);
      }),
    );
  });

  it('turn an IDN into its punycode form', () => {
    assert.equal(parseDomain('domain', 'bücher.example', SERVER), 'xn--bcher-kva.example');
    assert.equal(parseDomain('domain', 'ÄÖÜ.de', SERVER), 'xn--4ca0bs.de');
  });

  it('accept the punycode form of every IDN label, as the IDN itself gives', () => {
    const letter = fc.constantFrom(...'abcxyz0189äöüßéñçøåłžяжщλωあ漢字');
    const idnLabel = fc
      .array(letter, { minLength: 1, maxLength: 12 })
      .map((letters) => letters.join(''))
      .filter((text) => /\P{ASCII}/u.test(text));
    fc.assert(
      fc.property(idnLabel, (text) => {
        const fromUnicode = parseDomain('domain', `${text}.example`, SERVER);
        assert.match(fromUnicode, /^xn--/);
        assert.equal(parseDomain('domain', fromUnicode, SERVER), fromUnicode);
        assert.equal(parseDomain('domain', fromUnicode.toUpperCase(), SERVER), fromUnicode);
      }),
    );
  });

  it('refuse an xn-- label that is not the punycode form of an IDN label', () => {
    for (const bad of [
      'xn--zz.example',
      'xn--a.example',
      'shop.xn--zz',
      'www.xn--zz.example',
      'xn--example-.example', // decodes to the plain ASCII "example"
      'xn--bcher-kva-.example',
      'xn--ab--.example',
    ]) {
      refuses(() => parseDomain('domain', bad, SERVER), 'domain');
      refuses(() => parseEmail('email', `a@${bad}`), 'email');
    }
    // Any text after xn--: accepted only when it decodes to a label beyond ASCII that encodes back.
    const tail = fc
      .array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789-'), { minLength: 1, maxLength: 16 })
      .map((chars) => chars.join(''));
    fc.assert(
      fc.property(tail, (text) => {
        const label = `xn--${text}`;
        let accepted = true;
        try {
          parseDomain('domain', `${label}.example`, SERVER);
        } catch {
          accepted = false;
        }
        const unicode = domainToUnicode(label);
        const decodes =
          /\P{ASCII}/u.test(unicode) && domainToASCII(unicode) === label && !label.endsWith('-');
        assert.equal(accepted, decodes, label);
      }),
    );
  });

  it('refuse one label, bad labels, an all-digit last label, over-long names, the host name, names under it and the name servers', () => {
    for (const bad of [
      'localhost',
      '-a.com',
      'a-.com',
      'a..com',
      'a_b.com',
      'example.123',
      '192.168.1.1',
      `${'a'.repeat(64)}.com`,
      `${'abcdefghi.'.repeat(26)}com`,
      'exa mple.com',
      HOST,
      'PANEL.example.net.',
      `www.${HOST}`,
      `ns1.${HOST}`,
      'ns2.dns-host.example',
      'x.ns2.dns-host.example',
    ]) {
      refuses(() => parseDomain('domain', bad, SERVER), 'domain');
    }
  });
});

describe('e-mail addresses', () => {
  it('accept local@domain with the allowed local characters', () => {
    for (const good of ['a@example.com', "o'brien+tag@Example.COM", 'x.y_z!#$%&*/=?^`{|}~-@b.example']) {
      assert.ok(parseEmail('email', good).includes('@'));
    }
    assert.equal(parseEmail('email', 'Ann@Example.COM'), 'Ann@example.com');
  });

  it('refuse a missing @, stray dots, over-long parts and bad domains', () => {
    for (const bad of [
      'plain',
      '@example.com',
      '.a@example.com',
      'a.@example.com',
      'a..b@example.com',
      'a@b',
      'a b@c.com',
      `${'a'.repeat(65)}@example.com`,
      `a@${'b'.repeat(250)}.com`,
    ]) {
      refuses(() => parseEmail('email', bad), 'email');
    }
  });
});

describe('package names, passwords, addresses and control characters', () => {
  it('package names are case-sensitive, 1 to 64 long, starting with a letter or digit', () => {
    assert.equal(parsePackageName('package', 'Gold Plan_2.0-x'), 'Gold Plan_2.0-x');
    for (const bad of [' gold', '-gold', 'a'.repeat(65), 'gold/x', ''])
      refuses(() => parsePackageName('package', bad), 'package');
  });

  it('passwords are 8 to 128 characters without control characters', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme-ascii', minLength: 8, maxLength: 128 }), (p) => {
        fc.pre(!hasControlCharacters(p));
        assert.equal(parsePassword('password', p), p);
      }),
    );
    for (const bad of ['short', 'a'.repeat(129), 'with\ttab-char', 'with\nnewline'])
      refuses(() => parsePassword('password', bad), 'password');
  });

  it('addresses and CIDR ranges are read in canonical form', () => {
    assert.equal(parseAddressRange('ip', '192.0.2.0/24'), '192.0.2.0/24');
    assert.equal(parseAddressRange('ip', '2001:DB8::1'), '2001:db8::1');
    for (const bad of ['300.1.1.1', '10.0.0.0/33', '::1/129', 'host.example', '1.2.3.4/8/8'])
      refuses(() => parseAddressRange('ip', bad), 'ip');
  });

  it('control characters are found everywhere; tab and newline are allowed only when asked', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 0, max: 31 }), fc.string(), (a, code, b) => {
        const value = a + String.fromCharCode(code) + b;
        assert.equal(hasControlCharacters(value), true);
        assert.equal(
          hasControlCharacters(value, true),
          !(code === 9 || code === 10) || hasControlCharacters(a + b, true),
        );
      }),
    );
  });
});
