// The mailboxes and forwarders of accounts in the store (CONTRACT §14): an address belongs to one
// account across the store, the rows go with the account, and a change held from before they were
// kept (its rows naming domains alone) is put back without them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { domainsOf } from '../../src/store/domains.ts';
import { uniqueViolation } from '../../src/store/errors.ts';
import {
  forwardersOf,
  insertForwarder,
  insertMailbox,
  type Mailbox,
  mailboxesOf,
} from '../../src/store/mailboxes.ts';
import { createAccount, putBackHeld, suiteHarness, TEST_DIALECT } from '../helpers.ts';

const at = new Date('2026-01-02T03:04:05.000Z');
const mailbox = (email: string): Mailbox => ({
  email,
  passwordHash: '$6$salt$hash',
  quota: 100,
  createdAt: at,
});

describe(`the mailboxes and forwarders of accounts (${TEST_DIALECT})`, () => {
  const h = suiteHarness();
  const db = () => h.services.store.db;

  it('keeps a mailbox and a forwarder as they were given, each address once across the store', async () => {
    await createAccount(h, 'alice', { domain: 'alice.example' });
    await createAccount(h, 'bob', { domain: 'bob.example' });
    await insertMailbox(db(), 'alice', mailbox('info@alice.example'));
    await insertMailbox(db(), 'alice', { ...mailbox('a@alice.example'), quota: null });
    await insertForwarder(db(), 'alice', {
      email: 'f@alice.example',
      to: ['x@y.example', 'z@y.example'],
      createdAt: at,
    });
    assert.deepEqual(await mailboxesOf(db(), 'alice'), [
      { ...mailbox('a@alice.example'), quota: null },
      mailbox('info@alice.example'),
    ]);
    assert.deepEqual(await forwardersOf(db(), 'alice'), [
      { email: 'f@alice.example', to: ['x@y.example', 'z@y.example'], createdAt: at },
    ]);
    const error = await insertMailbox(db(), 'bob', mailbox('info@alice.example')).catch((e: unknown) => e);
    assert.equal(uniqueViolation(error), 'email');
  });

  it('puts back a change held from before mailboxes were kept: its domains, and no mailbox', async () => {
    await insertMailbox(db(), 'bob', mailbox('made@bob.example'));
    const domains = await db().selectFrom('domains').selectAll().where('user', '=', 'bob').execute();
    await putBackHeld(h, 'bob', { domains });
    assert.deepEqual(await mailboxesOf(db(), 'bob'), []);
    assert.deepEqual(
      (await domainsOf(db(), 'bob')).map((d) => d.domain),
      ['bob.example'],
    );
  });

  it('removeacct takes them with the account', async () => {
    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    assert.deepEqual(await mailboxesOf(db(), 'alice'), []);
    assert.deepEqual(await forwardersOf(db(), 'alice'), []);
  });
});
