// The backup operations where the server keeps no backups (the record driver, CONTRACT §15): each
// refuses clearly and changes nothing; an account outside the caller's scope does not exist for
// them; their values are checked before anything is read.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { countAudit } from '../../src/store/audit.ts';
import { createAliceAndReseller, errorOf, suiteHarness } from '../helpers.ts';

describe('the backup operations on a server that keeps no backups', () => {
  const h = suiteHarness({ prepare: (h) => createAliceAndReseller(h, 'carl') });

  it('backupacct refuses with 400 invalid_parameter and queues no job', async () => {
    const reply = await h.call('backupacct', { user: 'alice' });
    assert.deepEqual(errorOf(reply), { status: 400, code: 'invalid_parameter', param: 'user' });
    assert.match(reply.body.info, /keeps no backups/);
    assert.deepEqual(await h.services.store.db.selectFrom('backup_jobs').selectAll().execute(), []);
  });

  it('listbackups and restoreacct refuse an account the caller cannot see as not found', async () => {
    for (const [op, params] of [
      ['listbackups', { user: 'ghost' }],
      ['restoreacct', { user: 'ghost', snapshot: 'deadbeef' }],
    ] as const) {
      assert.deepEqual(errorOf(await h.call(op, params)), {
        status: 400,
        code: 'account_not_found',
        param: 'user',
      });
    }
    // alice is not the reseller's.
    const outside = await h.callAs('res', 'listbackups', { user: 'alice' });
    assert.deepEqual(errorOf(outside), { status: 400, code: 'account_not_found', param: 'user' });
  });

  it('checks a snapshot id, what to restore and a path before anything else', async () => {
    const before = await countAudit(h.services.store.db);
    for (const [params, param] of [
      [{ user: 'alice', snapshot: '../etc' }, 'snapshot'],
      [{ user: 'alice', snapshot: 'abc' }, 'snapshot'],
      [{ user: 'alice', snapshot: 'deadbeef', what: 'everything' }, 'what'],
      [{ user: 'alice', snapshot: 'deadbeef', path: '/etc/passwd' }, 'path'],
      [{ user: 'alice', snapshot: 'deadbeef', path: 'public_html/../../bob' }, 'path'],
      [{ user: 'alice', snapshot: 'deadbeef', what: 'mail', path: 'public_html' }, 'path'],
    ] as const) {
      const reply = await h.call('restoreacct', params);
      assert.deepEqual(
        errorOf(reply),
        { status: 400, code: 'invalid_parameter', param },
        JSON.stringify(params),
      );
    }
    // Each refusal is audited, and nothing else happened.
    assert.equal(await countAudit(h.services.store.db), before + 6);
  });
});
