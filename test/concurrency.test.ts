import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { callCreateacct, createReseller, errorOf, suiteHarness } from './helpers.ts';

describe('concurrent calls', () => {
  const h = suiteHarness();

  it('one user name raced ten times gives exactly one 200', async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        callCreateacct(h, 'racer', { domain: `racer${i}.example`, email: 'r@example.com' }),
      ),
    );
    const codes = replies.map((reply) => (reply.statusCode === 200 ? 200 : errorOf(reply).code));
    assert.equal(codes.filter((code) => code === 200).length, 1);
    assert.equal(codes.filter((code) => code === 'account_exists').length, 9);
  });

  it('one domain raced ten times gives exactly one 200', async () => {
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        callCreateacct(h, `dom${i}`, { domain: 'contested.example', email: 'r@example.com' }),
      ),
    );
    assert.equal(replies.filter((reply) => reply.statusCode === 200).length, 1);
    assert.equal(replies.filter((reply) => errorOf(reply).code === 'domain_in_use').length, 9);
  });

  it("the last slot of a reseller's limit goes to exactly one of ten racing calls", async () => {
    await createReseller(h, 'limited', { reseller_limt: '3' });
    for (const user of ['lim1', 'lim2']) {
      assert.equal(
        (
          await h.callAs('limited', 'createacct', {
            user,
            domain: `${user}.example`,
            email: 'l@example.com',
            package: 'default',
          })
        ).statusCode,
        200,
      );
    }
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.callAs('limited', 'createacct', {
          user: `last${i}`,
          domain: `last${i}.example`,
          email: 'l@example.com',
          package: 'default',
        }),
      ),
    );
    assert.equal(replies.filter((reply) => reply.statusCode === 200).length, 1);
    assert.equal(replies.filter((reply) => errorOf(reply).code === 'reseller_limit').length, 9);
    assert.deepEqual((await h.callAs('limited', 'get_current_users_count')).body.data, { users: 3 });
  });

  it("a reseller's quota limit holds under racing calls", async () => {
    await createReseller(h, 'quotares', { reseller_quota: '100' });
    const replies = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        h.callAs('quotares', 'createacct', {
          user: `q${i}`,
          domain: `q${i}.example`,
          email: 'q@example.com',
          package: 'default',
          quota: '30',
          bandwidth: '1',
        }),
      ),
    );
    assert.equal(replies.filter((reply) => reply.statusCode === 200).length, 3);
  });
});
