// The domains of accounts in the store (CONTRACT §14): the main domain's row follows the account
// from createacct to removeacct, a domain belongs to one account across the store, and the accounts
// made before the table get the row of their main domain.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { isAtOrUnder } from '../../src/core/values.ts';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import {
  type Domain,
  domainsOf,
  findOverlappingDomain,
  insertDomain,
  toDomainRow,
} from '../../src/store/domains.ts';
import { uniqueViolation } from '../../src/store/errors.ts';
import { up as domainsMigration } from '../../src/store/migrations/0012-domains.ts';
import { up as reversedMigration } from '../../src/store/migrations/0024-domains-reversed.ts';
import {
  assertRefused,
  callCreateacct,
  createAccount,
  putBackHeld,
  suiteHarness,
  TEST_DIALECT,
} from '../helpers.ts';

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
    // The names under the new one are taken with it, those under the old one free.
    assert.equal(await findOverlappingDomain(db(), 'www.bob.example.net', 'carol'), 'bob.example.net');
    assert.equal(await findOverlappingDomain(db(), 'example.net', 'carol'), 'bob.example.net');
    assert.equal(await findOverlappingDomain(db(), 'www.bob.example.com', 'carol'), undefined);
    await saveAccount(db(), bob);
  });

  it('finds a domain of another account at, above or under a name, and only those', async () => {
    // Few labels, so that names fall at, above and under one another often.
    const name = fc
      .array(fc.constantFrom('a', 'b', 'ab', 'b-a'), { minLength: 1, maxLength: 3 })
      .map((labels) => [...labels, 'test'].join('.'));
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(name, { maxLength: 6 }), name, async (taken, wanted) => {
        await db().deleteFrom('domains').where('user', 'like', 'p%').execute();
        for (const [i, domain] of taken.entries()) await insertDomain(db(), `p${i % 2}`, addon(domain));
        const overlapping = (of: string) =>
          taken.filter(
            (domain, i) => `p${i % 2}` !== of && (isAtOrUnder(domain, wanted) || isAtOrUnder(wanted, domain)),
          );
        for (const user of ['p0', 'p1', 'newcomer']) {
          const found = await findOverlappingDomain(db(), wanted, user);
          const expected = overlapping(user);
          if (expected.length === 0) assert.equal(found, undefined, `${wanted} for ${user} among ${taken}`);
          else assert.ok(found && expected.includes(found), `${wanted} for ${user} among ${taken}: ${found}`);
        }
      }),
      { numRuns: 60 },
    );
    await db().deleteFrom('domains').where('user', 'like', 'p%').execute();
  });

  it('puts back domains kept without their reversed name, and finds the names above them', async () => {
    // A change held before the column existed (or a backup's record, or a row from another server)
    // keeps a domain's row without it: put back, the row is the store's again, reversed and all.
    const main = await db().selectFrom('domains').selectAll().where('user', '=', 'alice').execute();
    const kept = [...main, toDomainRow('alice', addon('shop.kept.example'))].map(
      ({ reversed: _, ...rest }) => rest,
    );
    await putBackHeld(h, 'alice', { domains: kept });
    // Names above them: found only by the reversed names' range.
    assert.equal(await findOverlappingDomain(db(), 'kept.example', 'carol'), 'shop.kept.example');
    await db().deleteFrom('domains').where('domain', '=', 'shop.kept.example').execute();
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

  it('the migration keeps each domain made before reversed too', async () => {
    await insertDomain(db(), 'alice', addon('www.shop.example'));
    await db().schema.dropIndex('domains_reversed').execute();
    await db().schema.alterTable('domains').dropColumn('reversed').execute();
    await reversedMigration(db(), TEST_DIALECT);
    const rows = await db().selectFrom('domains').select(['domain', 'reversed']).orderBy('domain').execute();
    assert.deepEqual(
      rows.map((row) => ({ ...row })),
      [
        { domain: 'alice.example.com', reversed: 'com.example.alice' },
        { domain: 'www.shop.example', reversed: 'example.shop.www' },
      ],
    );
    assert.equal(await findOverlappingDomain(db(), 'shop.example', 'carol'), 'www.shop.example');
    await db().deleteFrom('domains').where('domain', '=', 'www.shop.example').execute();
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
