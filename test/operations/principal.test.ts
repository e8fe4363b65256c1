// One principal for every audience (src/operations/principal.ts), carried through the pipeline:
// rights, scope, the audit entry and Idempotency-Keys, whoever calls.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { changeContactEmail } from '../../src/operations/change-contact-email.ts';
import { changeState, targetAccount } from '../../src/operations/common.ts';
import { execute } from '../../src/operations/execute.ts';
import { defineOperation, kinds, type Operation, required } from '../../src/operations/operation.ts';
import {
  type Administrator,
  actingFor,
  actorName,
  type Holder,
  holderAccountOf,
  idempotencyOwner,
  type Principal,
  principalMessage,
  principalOfMessage,
  scopeOf,
} from '../../src/operations/principal.ts';
import { usersCount } from '../../src/operations/users-count.ts';
import { findAccount, listAccounts, saveAccount } from '../../src/store/accounts.ts';
import { listAudit } from '../../src/store/audit.ts';
import { createAccount, createChild, createReseller, type Harness, refusal, setup } from '../helpers.ts';

/** A holder's own change, as the customer API's will be: the contact address of its account. */
const noteContact = defineOperation({
  name: 'note_contact',
  summary: "Change the holder's contact address.",
  changesState: true,
  audiences: ['holder'],
  params: { email: required(kinds.email, 'New contact address') },
  example: { email: 'me@example.org' },
  result: { type: 'string' },
  errors: [],
  async run(ctx, input) {
    await changeState(ctx, async (db) => {
      const account = await targetAccount(db, ctx.principal, holderAccountOf(ctx.principal)!.user);
      await saveAccount(db, { ...account, contactEmail: input.email });
    });
    return { data: 'noted', info: 'noted' };
  },
});

describe('a principal', () => {
  let h: Harness;
  let holder: Holder;
  let admin: Administrator;
  const run = (operation: Operation, principal: Principal, params: Record<string, string>, key?: string) =>
    execute(h.services, {
      // biome-ignore lint/suspicious/noExplicitAny: any operation, whatever its schema.
      operation: operation as Operation<any>,
      params: new Map(Object.entries(params).map(([name, value]) => [name, [value]])),
      address: principal.address,
      claimedUser: actorName(principal),
      identify: async () => principal,
      ...(key !== undefined && { idempotencyKey: key }),
    });

  before(async () => {
    h = await setup();
    await createAccount(h, 'alice');
    await createAccount(h, 'bob');
    await createReseller(h, 'res');
    await createChild(h, 'res', 'kid');
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    holder = { kind: 'holder', via: 'token', account: alice, credential: 'token-1', address: '192.0.2.9' };
    admin = { kind: 'admin', via: 'portal', apiAccount: null, address: '192.0.2.8' };
  });
  after(() => h.close());

  it('as a holder reaches exactly its own account, whatever it names', async () => {
    const { db } = h.services.store;
    assert.deepEqual(scopeOf(holder), { user: 'alice' });
    assert.deepEqual(
      (await listAccounts(db, scopeOf(holder))).map((a) => a.user),
      ['alice'],
    );
    assert.equal((await targetAccount(db, holder, 'alice')).user, 'alice');
    for (const other of ['bob', 'res', 'kid']) {
      assert.deepEqual(await refusal(targetAccount(db, holder, other)), {
        status: 400,
        code: 'account_not_found',
      });
    }
  });

  it('as a holder is refused every operation of the administrator and resellers with 403', async () => {
    assert.deepEqual(
      await refusal(run(changeContactEmail, holder, { user: 'bob', email: 'x@example.org' })),
      {
        status: 403,
        code: 'forbidden',
      },
    );
    assert.deepEqual(await refusal(run(usersCount, holder, {})), { status: 403, code: 'forbidden' });
    assert.equal((await findAccount(h.services.store.db, 'bob'))!.contactEmail, 'bob@example.org');
  });

  it('as a holder changes its own account, audited as customer:<user>, kind holder', async () => {
    await run(noteContact, holder, { email: 'alice@example.net' });
    assert.equal((await findAccount(h.services.store.db, 'alice'))!.contactEmail, 'alice@example.net');
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.deepEqual(
      { ...entry, id: 0, at: '' },
      {
        id: 0,
        at: '',
        api_user: 'customer:alice',
        reseller: null,
        principal: 'holder',
        via: 'token',
        acting_for: null,
        address: '192.0.2.9',
        operation: 'note_contact',
        target: 'alice',
        status: 200,
        code: null,
      },
    );
  });

  it("as the administrator is refused a holder's operation unless it acts for one, then audited so", async () => {
    assert.deepEqual(await refusal(run(noteContact, admin, { email: 'bob@example.net' })), {
      status: 403,
      code: 'forbidden',
    });
    const bob = (await findAccount(h.services.store.db, 'bob'))!;
    const forBob = actingFor(admin, bob);
    assert.deepEqual(scopeOf(forBob), { user: 'bob' });
    await run(noteContact, forBob, { email: 'bob@example.net' });
    assert.equal((await findAccount(h.services.store.db, 'bob'))!.contactEmail, 'bob@example.net');
    const [entry] = await listAudit(h.services.store.db, { limit: 1 });
    assert.equal(entry?.api_user, 'root');
    assert.equal(entry?.principal, 'admin');
    assert.equal(entry?.via, 'portal');
    assert.equal(entry?.acting_for, 'bob');
    assert.equal(entry?.target, 'bob');
    // Acting for a holder, the administrator's own operations are out of reach.
    assert.equal((await refusal(run(usersCount, forBob, {}))).status, 403);
  });

  it('keys Idempotency-Keys by principal: a holder and the administrator never share one', async () => {
    // The holder of this account alice, not of one of the same name made before or after it.
    assert.equal(idempotencyOwner(holder), `holder:alice:${holder.account.setupAt.toISOString()}`);
    assert.equal(idempotencyOwner(admin), 'portal');
    await run(noteContact, holder, { email: 'one@example.net' }, 'order-1');
    const replay = await run(noteContact, holder, { email: 'one@example.net' }, 'order-1');
    assert.equal(replay.status, 200);
    assert.ok(replay.body, 'the stored answer');
    const bob = (await findAccount(h.services.store.db, 'bob'))!;
    const fresh = await run(noteContact, actingFor(admin, bob), { email: 'two@example.net' }, 'order-1');
    assert.equal(fresh.body, undefined, 'acted, not replayed');
    assert.equal((await findAccount(h.services.store.db, 'bob'))!.contactEmail, 'two@example.net');
    // The same key for another holder is another call: refused, not run for the wrong account.
    const alice = (await findAccount(h.services.store.db, 'alice'))!;
    assert.deepEqual(
      await refusal(run(noteContact, actingFor(admin, alice), { email: 'two@example.net' }, 'order-1')),
      { status: 400, code: 'invalid_parameter' },
    );
  });

  it('travels to another server of the fleet whole, and a forged one does not parse', () => {
    for (const principal of [holder, admin, actingFor(admin, holder.account)]) {
      const message = principalMessage(principal);
      assert.deepEqual(principalOfMessage(JSON.parse(JSON.stringify(message))), message);
    }
    const message = principalMessage(holder);
    for (const forged of [
      { ...message, kind: 'root' },
      { ...message, via: 'api' },
      { ...message, holder: null },
      { ...message, holder: '../etc' },
      { ...message, kind: 'reseller' },
      null,
    ]) {
      assert.equal(principalOfMessage(forged), null, JSON.stringify(forged));
    }
  });
});
