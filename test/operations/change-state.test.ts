// What every state-changing call shares: its audit entry commits with it, its system steps are
// journalled while they run, and a conflict with another server is retried.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { inspect, recoverInterruptedCalls } from '../../src/maintenance.ts';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import { countAudit } from '../../src/store/audit.ts';
import { findPackage } from '../../src/store/packages.ts';
import { holdAccounts, trackWrites } from '../../src/store/pending.ts';
import { createAccount, errorOf, type Harness, recordingDriver, setup } from '../helpers.ts';

describe('changing state', () => {
  const driver = recordingDriver();
  let h: Harness;
  before(async () => {
    h = await setup({ ipPool: { ipv4: ['198.51.100.1', '198.51.100.2'], ipv6: [] } }, { driver });
  });
  after(() => h.close());

  it('commits the audit entry with the change: if the entry cannot be written, nothing changes', async () => {
    const { db } = h.services.store;
    if (h.services.store.dialect === 'sqlite') {
      await sql`create trigger refuse_audit before insert on audit_log when new.target = 'auditfail'
                begin select raise(abort, 'audit refused'); end`.execute(db);
    } else {
      await sql`create function refuse_audit() returns trigger language plpgsql as $$
                begin if new.target = 'auditfail' then raise exception 'audit refused'; end if; return new; end $$`.execute(
        db,
      );
      await sql`create trigger refuse_audit before insert on audit_log for each row execute function refuse_audit()`.execute(
        db,
      );
    }
    const audits = await countAudit(db);
    const reply = await h.call('createacct', {
      user: 'auditfail',
      domain: 'auditfail.example',
      email: 'a@example.com',
      package: 'default',
    });
    assert.deepEqual(errorOf(reply), { status: 500, code: 'internal', param: undefined });
    assert.equal(await findAccount(db, 'auditfail'), undefined);
    assert.equal(await countAudit(db), audits);
    // Its system steps were undone.
    assert.deepEqual(driver.log.filter((line) => line.startsWith('undo create:')).length, 3);
  });

  it('journals system steps while they run, and clears the journal after the commit or the undo', async () => {
    const journalDir = join(h.dataDir, 'journal');
    const seen: { files: string[]; entry: Record<string, string> }[] = [];
    const original = driver.createAccount;
    const look = {
      name: 'look at the journal',
      run: async () => {
        const files = readdirSync(journalDir);
        seen.push({ files, entry: JSON.parse(readFileSync(join(journalDir, files[0]!), 'utf8')) });
      },
      undo: async () => {},
    };
    driver.createAccount = (account, password) => [...original(account, password), look];
    try {
      const reply = await h.call('createacct', {
        user: 'journaled',
        domain: 'journaled.example',
        email: 'a@example.com',
        package: 'default',
      });
      assert.equal(reply.statusCode, 200);
      assert.equal(seen[0]?.files.length, 1);
      const { user, domain, homedir } = seen[0]!.entry;
      assert.deepEqual([user, domain, homedir], ['journaled', 'journaled.example', '/home/journaled']);
      assert.deepEqual(readdirSync(journalDir), []);
      driver.failAt = 'create:third';
      await h.call('createacct', {
        user: 'unjournal',
        domain: 'unjournal.example',
        email: 'a@example.com',
        package: 'default',
      });
      assert.deepEqual(readdirSync(journalDir), []);
    } finally {
      driver.failAt = null;
      driver.createAccount = original;
    }
  });

  it('gives each of two racing calls its own dedicated address', async () => {
    const replies = await Promise.all(
      ['ipa', 'ipb'].map((user) =>
        h.call('createacct', {
          user,
          domain: `${user}.example`,
          email: 'a@example.com',
          package: 'default',
          ipv4: 'on',
        }),
      ),
    );
    const addresses = replies
      .map((r) => (r.body.data as { dedicatedip: { ipv4: string } }).dedicatedip.ipv4)
      .sort();
    assert.deepEqual(addresses, ['198.51.100.1', '198.51.100.2']);
  });

  it('runs system steps after the commit: other accounts change meanwhile, the same account waits', async () => {
    const { db } = h.services.store;
    for (const user of ['slowa', 'quickb']) await createAccount(h, user);
    const gate = Promise.withResolvers<void>();
    const started = Promise.withResolvers<void>();
    const original = driver.suspendAccount;
    driver.suspendAccount = (account) =>
      account.user === 'slowa'
        ? [
            {
              name: 'suspend:gated',
              run: async () => {
                started.resolve();
                await gate.promise;
              },
              undo: async () => {},
            },
          ]
        : original(account);
    try {
      const slow = h.call('suspendacct', { user: 'slowa' });
      await started.promise;
      const held = await db.selectFrom('pending_changes').select(['user', 'server']).execute();
      assert.deepEqual(
        held.map((row) => ({ ...row })),
        [{ user: 'slowa', server: 'panel' }],
      );
      // The store is free: another account's change, with steps, is done while slowa's wait.
      assert.equal((await h.call('suspendacct', { user: 'quickb' })).statusCode, 200);
      assert.equal((await h.call('editquota', { user: 'quickb', quota: '300' })).statusCode, 200);
      // A change to slowa itself waits for the steps to end.
      let answered = false;
      const email = h
        .call('changecontactemail', { user: 'slowa', email: 'later@example.com' })
        .finally(() => {
          answered = true;
        });
      await sleep(150);
      assert.equal(answered, false);
      gate.resolve();
      assert.equal((await slow).statusCode, 200);
      assert.equal((await email).statusCode, 200);
      const account = await findAccount(db, 'slowa');
      assert.equal(account?.suspension?.by, 'root');
      assert.equal(account?.contactEmail, 'later@example.com');
      assert.deepEqual(await db.selectFrom('pending_changes').selectAll().execute(), []);
    } finally {
      gate.resolve();
      driver.suspendAccount = original;
    }
  });

  it('puts the rows back when a step after the commit fails, and frees what they held only then', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'keepme');
    const before = await findAccount(db, 'keepme');
    driver.failAt = 'remove:third';
    try {
      const reply = await h.call('removeacct', { user: 'keepme' });
      assert.deepEqual(errorOf(reply), { status: 500, code: 'provisioning_failed', param: undefined });
    } finally {
      driver.failAt = null;
    }
    assert.deepEqual(await findAccount(db, 'keepme'), before);
    assert.deepEqual(await db.selectFrom('pending_changes').selectAll().execute(), []);
    assert.deepEqual(driver.log.slice(-2), ['undo remove:second keepme', 'undo remove:first keepme']);

    // A package edit whose steps fail: the package and every account on it as they were.
    assert.equal((await h.call('addpkg', { name: 'edited', quota: '100' })).statusCode, 200);
    for (const user of ['pkga', 'pkgb']) await createAccount(h, user, { package: 'edited' });
    driver.failAt = 'limits:second';
    try {
      const reply = await h.call('editpkg', { name: 'edited', quota: '200' });
      assert.equal(errorOf(reply).code, 'provisioning_failed');
    } finally {
      driver.failAt = null;
    }
    assert.equal((await findPackage(db, 'edited'))?.limits.quota, 100);
    for (const user of ['pkga', 'pkgb']) assert.equal((await findAccount(db, user))?.limits.quota, 100);
  });

  it('makes a createacct for the domain of a removal still running wait for its end', async () => {
    await createAccount(h, 'leaving');
    const gate = Promise.withResolvers<void>();
    const started = Promise.withResolvers<void>();
    const original = driver.removeAccount;
    driver.removeAccount = (account) => [
      {
        name: 'remove:gated',
        run: async () => {
          started.resolve();
          await gate.promise;
        },
        undo: async () => {},
      },
      ...original(account),
    ];
    try {
      const removal = h.call('removeacct', { user: 'leaving' });
      await started.promise;
      let answered = false;
      const creation = h
        .call('createacct', {
          user: 'arriving',
          domain: 'leaving.example.com',
          email: 'a@example.com',
          package: 'default',
        })
        .finally(() => {
          answered = true;
        });
      await sleep(150);
      assert.equal(answered, false);
      gate.resolve();
      assert.equal((await removal).statusCode, 200);
      assert.equal((await creation).statusCode, 200);
    } finally {
      gate.resolve();
      driver.removeAccount = original;
    }
  });

  it('puts back, at start, the rows of a change whose steps never ended', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'crashed');
    const before = await findAccount(db, 'crashed');
    await db.transaction().execute(async (trx) => {
      trackWrites(trx);
      await saveAccount(trx, { ...before!, contactEmail: 'half@example.com' });
      await holdAccounts(trx, 'an-interrupted-change', 'panel', []);
    });
    assert.ok(
      (await inspect(h.services)).some((line) => line.startsWith('crashed: a change was interrupted')),
    );
    assert.deepEqual(await recoverInterruptedCalls(h.services), [
      'crashed: rows put back as they were before an interrupted change',
    ]);
    assert.deepEqual(await findAccount(db, 'crashed'), before);
    assert.deepEqual(await db.selectFrom('pending_changes').selectAll().execute(), []);
  });
});
