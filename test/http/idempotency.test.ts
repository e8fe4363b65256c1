import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countAudit, listAudit } from '../../src/store/audit.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  addApiUser,
  assertRefused,
  errorOf,
  FORM,
  form,
  recordingDriver,
  suiteHarness,
} from '../helpers.ts';

describe('Idempotency-Key', () => {
  const driver = recordingDriver();
  const h = suiteHarness({ driver });
  const send = (
    op: string,
    params: Record<string, string>,
    key?: string,
    user = ADMIN_USER,
    password = ADMIN_PASSWORD,
  ) =>
    h.request({
      url: `/api/v1/${op}/`,
      headers: { ...FORM, ...(key === undefined ? {} : { 'idempotency-key': key }) },
      body: form({ apiuser: user, apiauth: password, ...params }),
    });
  const users = async () => ((await h.call('get_current_users_count')).body.data as { users: number }).users;
  const account = (user: string) => ({
    user,
    domain: `${user}.example`,
    email: 'a@example.com',
    package: 'default',
  });

  it('acts once: a retry with the same key gets the same answer back without acting again', async () => {
    const first = await send('createacct', account('once'), 'order-1001');
    assert.equal(first.statusCode, 200);
    const before = await users();
    driver.log.length = 0;
    const retry = await send('createacct', account('once'), 'order-1001');
    assert.equal(retry.statusCode, 200);
    assert.deepEqual(retry.body, first.body);
    assert.equal(await users(), before);
    assert.deepEqual(driver.log, []);
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.equal(entry?.code, 'replayed');
  });

  it('refuses the same key with other parameters, naming the header', async () => {
    await send('suspendacct', { user: 'once', reason: 'a' }, 'order-1002');
    const other = await send('suspendacct', { user: 'once', reason: 'b' }, 'order-1002');
    assertRefused(other, 400, 'invalid_parameter', 'Idempotency-Key');
  });

  it('keeps keys apart per API account', async () => {
    await addApiUser(h.services, { name: 'second', password: 'second-password' });
    const mine = await send('createacct', account('mine'), 'shared-key');
    const theirs = await send('createacct', account('theirs'), 'shared-key', 'second', 'second-password');
    assert.equal(mine.statusCode, 200);
    assert.equal(theirs.statusCode, 200);
    assert.equal((theirs.body.data as { user: string }).user, 'theirs');
  });

  it('replays a refusal too, but lets a retry act again after a server error', async () => {
    const refused = await send('createacct', { ...account('refused'), domain: 'nodot' }, 'order-1003');
    assert.equal(refused.statusCode, 400);
    // The same answer; only the Date header may have moved on by a second.
    const { date: _, ...headers } = refused.headers;
    const replayed = await send('createacct', { ...account('refused'), domain: 'nodot' }, 'order-1003');
    const { date: __, ...replayedHeaders } = replayed.headers;
    assert.deepEqual({ ...replayed, headers: replayedHeaders }, { ...refused, headers });

    driver.failAt = 'create:second';
    const failed = await send('createacct', account('flaky'), 'order-1004');
    driver.failAt = null;
    assert.equal(failed.statusCode, 500);
    const retried = await send('createacct', account('flaky'), 'order-1004');
    assert.equal(retried.statusCode, 200);
  });

  it('lets a key act again after 24 hours', async () => {
    await send('passwd', { user: 'once', password: 'Password-one-1' }, 'order-1005');
    await h.services.store.db
      .updateTable('idempotency_keys')
      .set({ created_ms: Date.now() - 25 * 3600_000 })
      .where('key', '=', 'order-1005')
      .execute();
    driver.log.length = 0;
    assert.equal(
      (await send('passwd', { user: 'once', password: 'Password-one-1' }, 'order-1005')).statusCode,
      200,
    );
    assert.equal(driver.log.length, 3);
  });

  it('acts once however many calls with the key race', async () => {
    const before = await users();
    const replies = await Promise.all(
      Array.from({ length: 8 }, () => send('createacct', account('racer'), 'order-1006')),
    );
    assert.deepEqual(new Set(replies.map((r) => r.statusCode)), new Set([200]));
    assert.equal(await users(), before + 1);
    for (const reply of replies) assert.deepEqual(reply.body, replies[0]!.body);
  });

  it('refuses a malformed key, and ignores the header on reads', async () => {
    const bad = await send('createacct', account('badkey'), 'has space');
    assertRefused(bad, 400, 'invalid_parameter', 'Idempotency-Key');
    const long = await send('createacct', account('badkey'), 'k'.repeat(256));
    assert.equal(errorOf(long).param, 'Idempotency-Key');
    const auditBefore = await countAudit(h.services.store.db);
    const read = await send('listaccts', {}, 'has space');
    assert.equal(read.statusCode, 200);
    assert.equal(await countAudit(h.services.store.db), auditBefore);
  });
});
