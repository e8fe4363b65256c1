import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressAllowed, canonicalAddress } from '../../src/auth/access.ts';

describe('restricted remote access', () => {
  it('allows listed addresses and addresses inside listed ranges', () => {
    const allowed = ['203.0.113.7', '198.51.100.0/24', '2001:db8::/32'];
    assert.equal(addressAllowed('203.0.113.7', allowed), true);
    assert.equal(addressAllowed('198.51.100.200', allowed), true);
    assert.equal(addressAllowed('2001:db8:1::5', allowed), true);
    assert.equal(addressAllowed('203.0.113.8', allowed), false);
    assert.equal(addressAllowed('198.51.101.1', allowed), false);
    assert.equal(addressAllowed('2001:db9::1', allowed), false);
    assert.equal(addressAllowed('127.0.0.1', []), false);
  });

  it('counts an IPv4-mapped IPv6 peer as its IPv4 address', () => {
    assert.equal(canonicalAddress('::ffff:192.0.2.5'), '192.0.2.5');
    assert.equal(addressAllowed('::ffff:192.0.2.5', ['192.0.2.0/28']), true);
    assert.equal(addressAllowed('::FFFF:192.0.2.99', ['192.0.2.0/28']), false);
  });

  it('never matches garbage', () => {
    assert.equal(addressAllowed('not-an-address', ['0.0.0.0/0', '::/0']), false);
  });
});
