// The domains of accounts in the store (CONTRACT §14): the main domain's row follows the account
// from createacct to removeacct, a domain belongs to one account across the store, and the accounts
// made before the table get the row of their main domain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import { type Domain, domainsOf, insertDomain } from '../../src/store/domains.ts';
import { uniqueViolation } from '../../src/store/errors.ts';
import { up as domainsMigration } from '../../src/store/migrations/0012-domains.ts';
import { assertRefused, callCreateacct, createAccount, suiteHarness, TEST_DIALECT } from '../helpers.ts';

const addon = (domain: string): Domain => ({
  domain,
  kind: 'addon',
  docroot: `public_html/${domain}`,
  createdAt: new Date('2026-01-02T03:04:05.000Z'),
});

describe(`the domains of accounts (${TEST_DIALECT})`, () => {
  const h = suiteHarness();
  const db = () => h.services.store.db;

  it('createacct gives the account its main domain, served from public_html', async () => {
    await createAccount(h, 'alice');
    const account = await findAccount(db(), 'alice');
    assert.deepEqual(await domainsOf(db(), 'alice'), [
      { domain: 'alice.example.com', kind: 'main', docroot: 'public_html', createdAt: account?.setupAt },
    ]);
  });

  it('lists the main domain first, then the others by name', async () => {
    await createAccount(h, 'bob');
    await insertDomain(db(), 'bob', addon('zed.example'));
    await insertDomain(db(), 'bob', { ...addon('bob-parked.example'), kind: 'parked', docroot: null });
    const domains = await domainsOf(db(), 'bob');
    assert.deepEqual(
      domains.map((d) => [d.domain, d.kind, d.docroot]),
      [
        ['bob.example.com', 'main', 'public_html'],
        ['bob-parked.example', 'parked', null],
        ['zed.example', 'addon', 'public_html/zed.example'],
      ],
    );
    assert.equal(domains[2]?.createdAt.toISOString(), '2026-01-02T03:04:05.000Z');
  });

  it('refuses a domain another account already has, main or not', async () => {
    await assert.rejects(insertDomain(db(), 'alice', addon('bob.example.com')), (error) => {
      return uniqueViolation(error) === 'domain';
    });
    await assert.rejects(insertDomain(db(), 'alice', addon('zed.example')), (error) => {
      return uniqueViolation(error) === 'domain';
    });
  });

  it('createacct refuses a domain that another account has as an addon domain with 400 domain_in_use', async () => {
    assertRefused(
      await callCreateacct(h, 'carol', { domain: 'zed.example' }),
      400,
      'domain_in_use',
      'domain',
    );
    assertRefused(
      await callCreateacct(h, 'carol', { domain: 'www.zed.example' }),
      400,
      'domain_in_use',
      'domain',
    );
  });

  it('a change of the main domain renames its row and leaves the others', async () => {
    const bob = (await findAccount(db(), 'bob'))!;
    await saveAccount(db(), { ...bob, domain: 'bob.example.net' });
    assert.deepEqual(
      (await domainsOf(db(), 'bob')).map((d) => d.domain),
      ['bob.example.net', 'bob-parked.example', 'zed.example'],
    );
    await saveAccount(db(), bob);
  });

  it('removeacct removes every domain of the account', async () => {
    assert.equal((await h.call('removeacct', { user: 'bob' })).statusCode, 200);
    assert.deepEqual(await domainsOf(db(), 'bob'), []);
    assert.equal(
      (await db().selectFrom('domains').select('domain').where('domain', '=', 'zed.example').execute())
        .length,
      0,
    );
  });

  it('the migration gives each account made before the row of its main domain', async () => {
    await db().schema.dropTable('domains').execute();
    await db().schema.alterTable('pending_changes').dropColumn('objects').execute();
    await domainsMigration(db());
    const rows = (await db().selectFrom('domains').selectAll().orderBy('domain').execute()).map((row) => ({
      ...row,
    }));
    const alice = (await findAccount(db(), 'alice'))!;
    assert.deepEqual(rows, [
      {
        domain: 'alice.example.com',
        user: 'alice',
        kind: 'main',
        docroot: 'public_html',
        created_at: alice.setupAt.toISOString(),
      },
    ]);
  });
});
