// The holders' lock-out (docs/customer.md, Logging in), tried as the account next door would from
// its own shell on the server: every 127.x address is the machine's own, a host has a whole IPv6
// /64, and a billing system on the same server makes 127.0.0.1 a trusted address. None of these
// buys more guesses at another account's password; past the limit an account's password logins
// wait from anywhere, while its single sign-on from billing still lets its holder in.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { holderNetwork } from '../../src/auth/holders.ts';
import { assertRefused, callCreateacct, suiteHarness } from '../helpers.ts';

const BOB = { user: 'bob', password: 'bob-secret-22' };
const guess = (i: number) => ({ user: 'bob', password: `a-wrong-guess-${i}` });

describe('the holders’ lock-out', () => {
  const h = suiteHarness({
    config: { trustedAddresses: ['127.0.0.1', '::1'] },
    prepare: async (h) => {
      await callCreateacct(h, 'bob', { password: BOB.password });
      await callCreateacct(h, 'carol', { password: 'carol-secret-3' });
      await callCreateacct(h, 'dave', { password: 'dave-secret-44' });
    },
  });

  it('counts loopback as one network, an IPv6 /64 as one, and an IPv4 address as itself', () => {
    assert.equal(holderNetwork('127.0.0.1'), holderNetwork('127.3.2.1'));
    assert.equal(holderNetwork('::1'), holderNetwork('127.0.0.1'));
    assert.equal(holderNetwork('::ffff:127.0.0.9'), holderNetwork('127.0.0.1'));
    assert.equal(holderNetwork('2001:db8:1:2::5'), holderNetwork('2001:db8:1:2:ffff:1:2:3'));
    assert.notEqual(holderNetwork('2001:db8:1:2::5'), holderNetwork('2001:db8:1:3::5'));
    assert.notEqual(holderNetwork('192.0.2.1'), holderNetwork('192.0.2.2'));
    assert.equal(holderNetwork('::ffff:192.0.2.1'), holderNetwork('192.0.2.1'));
  });

  it('locks every loopback address together, trusted or not, and then the account itself', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const reply = await h.callAsHolder({ ...guess(i), address: `127.0.${i}.${i + 2}` }, 'account_info');
      statuses.push(reply.statusCode);
    }
    assert.ok(
      statuses.slice(-2).every((s) => s === 429),
      statuses.join(' '),
    );
    // The right password waits too, from loopback and (the account being locked) from elsewhere.
    assertRefused(
      await h.callAsHolder({ ...BOB, address: '127.0.0.1' }, 'account_info'),
      429,
      'rate_limited',
      undefined,
    );
    assertRefused(
      await h.callAsHolder({ ...BOB, address: '198.51.100.7' }, 'account_info'),
      429,
      'rate_limited',
      undefined,
    );
    // Another account's holder on another network is not held up by bob's lock.
    const carol = await h.callAsHolder(
      { user: 'carol', password: 'carol-secret-3', address: '198.51.100.8' },
      'account_info',
    );
    assert.equal(carol.statusCode, 200);
    // Billing's single sign-on still opens bob's account for bob: it checks no password.
    const sso = await h.call('create_user_session', { user: 'bob' });
    assert.equal(sso.statusCode, 200);
  });

  it('counts every address of an IPv6 /64 together', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const address = `2001:db8:77:1:${(i + 1).toString(16)}::${i + 1}`;
      const reply = await h.callAsHolder(
        { user: `nobody${i}`, password: 'a-wrong-guess', address },
        'account_info',
      );
      statuses.push(reply.statusCode);
    }
    assert.ok(
      statuses.slice(-2).every((s) => s === 429),
      statuses.join(' '),
    );
    const right = await h.callAsHolder(
      { user: 'dave', password: 'dave-secret-44', address: '2001:db8:77:1::abcd' },
      'account_info',
    );
    assert.equal(right.statusCode, 429);
  });

  it('checks no more guesses sent at once from many networks than the account’s limit allows', async () => {
    await callCreateacct(h, 'fran', { password: 'fran-secret-55' });
    const guesses = Array.from({ length: 40 }, (_, i) =>
      h.callAsHolder(
        { user: 'fran', password: `a-wrong-guess-${i}`, address: `2001:db8:${100 + i}::1` },
        'account_info',
      ),
    );
    const statuses = (await Promise.all(guesses)).map((reply) => reply.statusCode);
    const checked = statuses.filter((s) => s === 403).length;
    assert.ok(checked <= 12, `${checked} guesses were checked: ${statuses.join(' ')}`);
    // One after the other, from networks of their own, they lock the account: then even the
    // right password waits, and is told it is the account's lock.
    for (let i = 0; i < 12; i++)
      await h.callAsHolder(
        { user: 'fran', password: `another-guess-${i}`, address: `2001:db8:${200 + i}::1` },
        'account_info',
      );
    const right = await h.callAsHolder(
      { user: 'fran', password: 'fran-secret-55', address: '2001:db8:999::1' },
      'account_info',
    );
    assertRefused(right, 429, 'rate_limited', undefined);
    assert.match(right.body.info, /this account/);
  });

  it('never refuses a right API token for its network’s failures', async () => {
    const made = await h.callAsHolder(
      { user: 'carol', password: 'carol-secret-3', address: '198.51.100.9' },
      'add_token',
      {
        name: 'deploy',
      },
    );
    const { token } = made.body.data as { token: string };
    // Loopback is locked by the failures of the test above and these.
    for (let i = 0; i < 11; i++)
      await h.callAsHolder({ ...guess(i), user: `nobody${i}`, address: '127.0.0.5' }, 'account_info');
    assertRefused(
      await h.callAsHolder(
        { user: 'nobody', password: 'x-wrong-pass', address: '127.0.0.1' },
        'account_info',
      ),
      429,
      'rate_limited',
      undefined,
    );
    const byToken = await h.callAsHolder({ token, address: '127.0.0.1' }, 'account_info');
    assert.equal(byToken.statusCode, 200);
    // A wrong token there is still refused as a locked network's call.
    assertRefused(
      await h.callAsHolder(
        { token: `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`, address: '127.0.0.1' },
        'account_info',
      ),
      429,
      'rate_limited',
      undefined,
    );
  });

  it('still spares a trusted address’s API calls: the billing system is not locked out by holders', async () => {
    assert.equal((await h.call('listaccts')).statusCode, 200);
  });
});
