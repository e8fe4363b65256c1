// The Public Suffix List's rules as Berth reads them (src/core/domain-claims.ts): plain, wildcard
// and exception rules, internationalized entries, comments; and Debian's list as installed.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PUBLIC_SUFFIX_LIST, PublicSuffixes, publicSuffixesAt } from '../../src/core/domain-claims.ts';

const LIST = `// ===BEGIN ICANN DOMAINS===
uk
co.uk
// ck : https://en.wikipedia.org/wiki/.ck
*.ck
!www.ck
公司.cn
*.kawasaki.jp
!city.kawasaki.jp
// ===BEGIN PRIVATE DOMAINS===
github.io   trailing words are no part of a rule
`;

describe('the public suffix rules', () => {
  const list = new PublicSuffixes(LIST);

  it('a plain rule is a suffix; a name registered under it is not', () => {
    assert.equal(list.isSuffix('co.uk'), true);
    assert.equal(list.isSuffix('github.io'), true);
    assert.equal(list.isSuffix('shop.co.uk'), false);
    assert.equal(list.isSuffix('www.shop.co.uk'), false);
    assert.equal(list.isSuffix('example.com'), false);
  });

  it('a wildcard makes every name one label under it a suffix, but for its exceptions', () => {
    assert.equal(list.isSuffix('anything.ck'), true);
    assert.equal(list.isSuffix('shop.anything.ck'), false);
    assert.equal(list.isSuffix('www.ck'), false);
    assert.equal(list.isSuffix('a.www.ck'), false);
    assert.equal(list.isSuffix('ward.kawasaki.jp'), true);
    assert.equal(list.isSuffix('city.kawasaki.jp'), false);
  });

  it('reads internationalized rules as punycode, as domains are kept', () => {
    assert.equal(list.isSuffix('xn--55qx5d.cn'), true);
    assert.equal(list.isSuffix('shop.xn--55qx5d.cn'), false);
  });

  it("reads Debian's list, once", () => {
    const debian = publicSuffixesAt(PUBLIC_SUFFIX_LIST);
    assert.ok(debian instanceof PublicSuffixes, JSON.stringify(debian));
    assert.ok(debian.size > 5000);
    assert.equal(publicSuffixesAt(PUBLIC_SUFFIX_LIST), debian);
    assert.deepEqual(publicSuffixesAt('/nonexistent/list.dat'), {
      problem: '/nonexistent/list.dat is missing',
    });
  });
});
