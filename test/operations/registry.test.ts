// Rules that hold for every operation in the registry, checked against each one.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiOperations } from '../../src/operations/registry.ts';
import { countAudit } from '../../src/store/audit.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  assertErrorAnswer,
  createReseller,
  errorOf,
  FORM,
  form,
  suiteHarness,
} from '../helpers.ts';

const named = [...apiOperations.operations.values()].filter((op) => op.name !== '');

describe('every operation', () => {
  const h = suiteHarness({
    prepare: async (h) => {
      await createReseller(h, 'res');
    },
  });

  it('is served under /api/ and /api/v1/ and refuses calls without credentials', async () => {
    for (const op of named) {
      for (const prefix of ['/api/', '/api/v1/']) {
        const reply = await h.request({ url: `${prefix}${op.name}/`, headers: FORM, body: form(op.example) });
        assertErrorAnswer(
          reply,
          403,
          'not_authenticated',
          'Authentication credentials were not provided',
          `${prefix}${op.name}`,
        );
      }
    }
  });

  it('refuses a wrong password with the permission sentence', async () => {
    for (const op of named) {
      const reply = await h.request({
        url: `/api/v1/${op.name}/`,
        headers: FORM,
        body: form({ apiuser: ADMIN_USER, apiauth: 'not-the-password', ...op.example }),
        remoteAddress: `10.77.${named.indexOf(op)}.1`,
      });
      assertErrorAnswer(
        reply,
        403,
        'forbidden',
        'You do not have permission to perform this action.',
        op.name,
      );
    }
  });

  it('answers every other method with 405 and Allow: POST, credentials or not', async () => {
    for (const op of [...named, { name: '' }]) {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
        for (const headers of [{}, { 'x-api-user': ADMIN_USER, 'x-api-password': ADMIN_PASSWORD }] as Record<
          string,
          string
        >[]) {
          const reply = await h.request({ method, url: `/api/v1/${op.name}${op.name ? '/' : ''}`, headers });
          assert.equal(reply.statusCode, 405, `${method} ${op.name}`);
          assert.equal(reply.headers.allow, 'POST');
        }
      }
    }
  });

  it('keeps every portal page behind the login, whatever the method', async () => {
    for (const url of [
      '/',
      '/accounts',
      '/packages',
      '/packages/default',
      '/audit',
      '/preferences/api-manager',
      '/preferences/api-manager/billing',
    ]) {
      const page = await h.admin.inject({ method: 'GET', url });
      assert.equal(page.statusCode, 303, url);
      assert.equal(page.headers.location, '/login');
    }
    for (const url of [
      '/logout',
      '/accounts/x/suspend',
      '/packages',
      '/preferences/api-manager',
      '/preferences/api-manager/billing/delete',
    ]) {
      const page = await h.admin.inject({
        method: 'POST',
        url,
        payload: '',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(page.statusCode, 303, url);
      assert.equal(page.headers.location, '/login');
    }
  });

  it('appends one audit entry per state-changing call, refused or not, and none for reads', async () => {
    for (const op of named) {
      const before = await countAudit(h.services.store.db);
      await h.request({
        url: `/api/v1/${op.name}/`,
        headers: FORM,
        body: form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD, user: 'ghost', name: 'ghostpkg' }),
      });
      assert.equal(await countAudit(h.services.store.db), before + (op.changesState ? 1 : 0), op.name);
    }
  });

  it('that changes packages is refused under a reseller with 403', async () => {
    for (const op of named.filter((o) => !o.audiences.includes('reseller'))) {
      assert.deepEqual(errorOf(await h.callAs('res', op.name, op.example)).code, 'forbidden', op.name);
    }
    assert.deepEqual(
      named.filter((o) => !o.audiences.includes('reseller')).map((o) => o.name),
      ['addpkg', 'editpkg', 'killpkg'],
    );
  });
});

describe('every state-changing operation on a demonstration server', () => {
  const h = suiteHarness({ config: { demo: true } });

  it('answers 403 demo_server and changes nothing; every read answers 200', async () => {
    for (const op of named) {
      const reply = await h.call(op.name, op.example);
      if (op.changesState) {
        assertErrorAnswer(
          reply,
          403,
          'demo_server',
          'This is a demonstration server: changes are disabled',
          op.name,
        );
      } else {
        assert.ok(reply.statusCode === 200 || errorOf(reply).code === 'account_not_found', op.name);
      }
    }
    assert.deepEqual((await h.call('listpackages')).body.data, { packages: 'default' });
  });
});

describe('the settings each operation carries', () => {
  it('the event its success sends, and whether a veto hook may refuse it', () => {
    const all = [...apiOperations.operations.values()];
    assert.deepEqual(Object.fromEntries(all.filter((o) => o.event).map((o) => [o.name, o.event])), {
      createacct: 'account.created',
      passwd: 'account.password_changed',
      setupreseller: 'reseller.setup',
      terminatereseller: 'reseller.terminated',
      suspendacct: 'account.suspended',
      unsuspendacct: 'account.unsuspended',
      changepackage: 'account.package_changed',
      removeacct: 'account.removed',
      restoreacct: 'backup.restored',
    });
    assert.deepEqual(
      all.filter((o) => o.vetoable).map((o) => o.name),
      ['createacct', 'removeacct'],
    );
  });
});
