import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { sha512Crypt, verifySha512Crypt } from '../../src/auth/sha512-crypt.js';

describe('SHA-512 crypt', () => {
  it('gives the results of the specification for its test vectors', () => {
    assert.equal(
      sha512Crypt('Hello world!', { salt: 'saltstring' }),
      '$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1',
    );
    assert.equal(
      sha512Crypt('Hello world!', { salt: 'saltstringsaltstring', rounds: 10000 }),
      '$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v.',
    );
    assert.equal(
      sha512Crypt('This is just a test', { salt: 'toolongsaltstring', rounds: 5000 }),
      '$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0',
    );
  });

  it('verifies the password it hashed, and no other', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 80 }),
        fc.string({ minLength: 1, maxLength: 80 }),
        (a, b) => {
          const hash = sha512Crypt(a);
          assert.match(hash, /^\$6\$[./0-9A-Za-z]{16}\$[./0-9A-Za-z]{86}$/);
          assert.equal(verifySha512Crypt(a, hash), true);
          assert.equal(verifySha512Crypt(b, hash), a === b);
        },
      ),
      { numRuns: 15 },
    );
  });

  it('never authenticates, and never throws, on locked, empty, foreign or absurd hashes', () => {
    const good = sha512Crypt('password1');
    for (const stored of [
      '*',
      '!',
      '!!',
      '',
      `!${good}`,
      '$1$abc$def',
      '$5$salt$abc',
      'x'.repeat(5000),
      `$6$rounds=999999999$salt$${good.slice(-86)}`,
      `$6$rounds=10$salt$${good.slice(-86)}`,
      good.slice(0, -1),
      `${good}\n`,
    ]) {
      assert.equal(verifySha512Crypt('password1', stored), false, stored.slice(0, 40));
      assert.equal(verifySha512Crypt('', stored), false);
    }
  });
});
