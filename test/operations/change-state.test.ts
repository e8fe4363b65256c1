// What every state-changing call shares: its audit entry commits with it, its system steps are
// journalled while they run, and a conflict with another server is retried.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { inspect, recoverInterruptedCalls } from '../../src/operations/maintenance.ts';
import type { Step } from '../../src/provision/driver.ts';
import { findAccount, saveAccount } from '../../src/store/accounts.ts';
import { countAudit } from '../../src/store/audit.ts';
import { type Domain, deleteDomain, domainsOf, insertDomain } from '../../src/store/domains.ts';
import { findPackage } from '../../src/store/packages.ts';
import { holdAccounts, trackWrites } from '../../src/store/pending.ts';
import {
  assertRefused,
  callCreateacct,
  createAccount,
  errorOf,
  recordingDriver,
  suiteHarness,
} from '../helpers.ts';

const domain = (name: string, kind: Domain['kind']): Domain => ({
  domain: name,
  kind,
  docroot: kind === 'parked' ? null : `public_html/${name}`,
  createdAt: new Date('2026-03-04T05:06:07.000Z'),
});

/** A system step that waits, once it runs (`started`), until the test opens it. */
function gatedStep(name: string) {
  const opened = Promise.withResolvers<void>();
  const started = Promise.withResolvers<void>();
  const step: Step = {
    name,
    run: async () => {
      started.resolve();
      await opened.promise;
    },
    undo: async () => {},
  };
  return { step, started: started.promise, open: () => opened.resolve() };
}

/** The call's answer within two seconds, or a failure: a call held up by a lock fails, not hangs. */
function within<T>(reply: Promise<T>): Promise<T> {
  return Promise.race([
    reply,
    sleep(2000).then(() => assert.fail('the call waited for another account’s steps')),
  ]);
}

/** The call, and whether it has answered yet. */
function answeredYet<T>(reply: Promise<T>) {
  const call = { reply, answered: false };
  void reply.finally(() => {
    call.answered = true;
  });
  return call;
}

describe('changing state', () => {
  const driver = recordingDriver();
  const h = suiteHarness({
    config: { ipPool: { ipv4: ['198.51.100.1', '198.51.100.2'], ipv6: [] } },
    driver,
  });
  /** `call`, with the recording driver failing at `step`. */
  const failingAt = async <T>(step: string, call: () => Promise<T>): Promise<T> => {
    driver.failAt = step;
    try {
      return await call();
    } finally {
      driver.failAt = null;
    }
  };

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
    const reply = await callCreateacct(h, 'auditfail', {
      domain: 'auditfail.example',
      email: 'a@example.com',
    });
    assertRefused(reply, 500, 'internal', undefined);
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
      const reply = await callCreateacct(h, 'journaled', {
        domain: 'journaled.example',
        email: 'a@example.com',
      });
      assert.equal(reply.statusCode, 200);
      assert.equal(seen[0]?.files.length, 1);
      const { user, domain, homedir } = seen[0]!.entry;
      assert.deepEqual([user, domain, homedir], ['journaled', 'journaled.example', '/home/journaled']);
      assert.deepEqual(readdirSync(journalDir), []);
      driver.failAt = 'create:third';
      await callCreateacct(h, 'unjournal', { domain: 'unjournal.example', email: 'a@example.com' });
      assert.deepEqual(readdirSync(journalDir), []);
    } finally {
      driver.failAt = null;
      driver.createAccount = original;
    }
  });

  it('gives each of two racing calls its own dedicated address', async () => {
    const replies = await Promise.all(
      ['ipa', 'ipb'].map((user) =>
        callCreateacct(h, user, { domain: `${user}.example`, email: 'a@example.com', ipv4: 'on' }),
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
    const gate = gatedStep('suspend:gated');
    const original = driver.suspendAccount;
    driver.suspendAccount = (account) => (account.user === 'slowa' ? [gate.step] : original(account));
    try {
      const slow = h.call('suspendacct', { user: 'slowa' });
      await gate.started;
      const held = await db.selectFrom('pending_changes').select(['user', 'server']).execute();
      assert.deepEqual(
        held.map((row) => ({ ...row })),
        [{ user: 'slowa', server: 'panel' }],
      );
      // The store is free: another account's change, with steps, is done while slowa's wait.
      assert.equal((await within(h.call('suspendacct', { user: 'quickb' }))).statusCode, 200);
      assert.equal((await within(h.call('editquota', { user: 'quickb', quota: '300' }))).statusCode, 200);
      // A change to slowa itself waits for the steps to end.
      const email = answeredYet(h.call('changecontactemail', { user: 'slowa', email: 'later@example.com' }));
      await sleep(150);
      assert.equal(email.answered, false);
      gate.open();
      assert.equal((await slow).statusCode, 200);
      assert.equal((await email.reply).statusCode, 200);
      const account = await findAccount(db, 'slowa');
      assert.equal(account?.suspension?.by, 'root');
      assert.equal(account?.contactEmail, 'later@example.com');
      assert.deepEqual(await db.selectFrom('pending_changes').selectAll().execute(), []);
    } finally {
      gate.open();
      driver.suspendAccount = original;
    }
  });

  it('puts the rows back when a step after the commit fails', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'keepme');
    const before = await findAccount(db, 'keepme');
    const removal = await failingAt('remove:third', () => h.call('removeacct', { user: 'keepme' }));
    assertRefused(removal, 500, 'provisioning_failed', undefined);
    assert.deepEqual(await findAccount(db, 'keepme'), before);
    assert.deepEqual(await db.selectFrom('pending_changes').selectAll().execute(), []);
    assert.deepEqual(driver.log.slice(-2), ['undo remove:second keepme', 'undo remove:first keepme']);

    // A package edit whose steps fail: the package and every account on it as they were.
    assert.equal((await h.call('addpkg', { name: 'edited', quota: '100' })).statusCode, 200);
    for (const user of ['pkga', 'pkgb']) await createAccount(h, user, { package: 'edited' });
    const edit = await failingAt('limits:second', () => h.call('editpkg', { name: 'edited', quota: '200' }));
    assert.equal(errorOf(edit).code, 'provisioning_failed');
    assert.equal((await findPackage(db, 'edited'))?.limits.quota, 100);
    for (const user of ['pkga', 'pkgb']) assert.equal((await findAccount(db, user))?.limits.quota, 100);
  });

  it('puts an account’s domains back with its row when a step after the commit fails', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'keepdomains');
    await insertDomain(db, 'keepdomains', domain('keep-addon.example', 'addon'));
    await insertDomain(db, 'keepdomains', domain('keep-parked.example', 'parked'));
    const before = await domainsOf(db, 'keepdomains');
    const removal = await failingAt('remove:second', () => h.call('removeacct', { user: 'keepdomains' }));
    assertRefused(removal, 500, 'provisioning_failed', undefined);
    assert.deepEqual(await domainsOf(db, 'keepdomains'), before);
    assert.equal(before.length, 3);

    // A creation whose steps fail leaves no domain behind.
    const creation = await failingAt('create:third', () => callCreateacct(h, 'gonedomains'));
    assertRefused(creation, 500, 'provisioning_failed', undefined);
    assert.deepEqual(await domainsOf(db, 'gonedomains'), []);
  });

  it('keeps every domain of a removal still running until it ends', async () => {
    const gate = gatedStep('remove:gated');
    const original = driver.removeAccount;
    driver.removeAccount = (account) => [gate.step, ...original(account)];
    try {
      await createAccount(h, 'goingdomains');
      await insertDomain(h.services.store.db, 'goingdomains', domain('going-addon.example', 'addon'));
      const removal = h.call('removeacct', { user: 'goingdomains' });
      await gate.started;
      const creation = answeredYet(callCreateacct(h, 'nextowner', { domain: 'shop.going-addon.example' }));
      await sleep(150);
      assert.equal(creation.answered, false);
      gate.open();
      assert.equal((await removal).statusCode, 200);
      assert.equal((await creation.reply).statusCode, 200);
    } finally {
      gate.open();
      driver.removeAccount = original;
    }
  });

  it('keeps the domain and the address of a removal still running until it ends', async () => {
    // Both pool addresses are taken (ipa, ipb); ipb's removal frees one only once its steps end.
    const gate = gatedStep('remove:gated');
    const original = driver.removeAccount;
    driver.removeAccount = (account) => [gate.step, ...original(account)];
    try {
      const removal = h.call('removeacct', { user: 'ipb' });
      await gate.started;
      const wanting = { email: 'a@example.com', package: 'default' };
      const refused = await within(
        h.call('createacct', { user: 'addr', domain: 'addr.example', ipv4: 'on', ...wanting }),
      );
      assert.equal(errorOf(refused).code, 'no_free_ip');
      const creation = answeredYet(
        h.call('createacct', { user: 'arriving', domain: 'ipb.example', ...wanting }),
      );
      await sleep(150);
      assert.equal(creation.answered, false);
      gate.open();
      assert.equal((await removal).statusCode, 200);
      assert.equal((await creation.reply).statusCode, 200);
      const taken = await h.call('createacct', {
        user: 'addr',
        domain: 'addr.example',
        ipv4: 'on',
        ...wanting,
      });
      assert.equal(taken.statusCode, 200);
    } finally {
      gate.open();
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

  it('puts back, at start, the domains of a change whose steps never ended', async () => {
    const { db } = h.services.store;
    await createAccount(h, 'crasheddomains');
    await insertDomain(db, 'crasheddomains', domain('crashed-old.example', 'addon'));
    const before = await domainsOf(db, 'crasheddomains');
    await db.transaction().execute(async (trx) => {
      trackWrites(trx);
      await deleteDomain(trx, 'crasheddomains', 'crashed-old.example');
      await insertDomain(trx, 'crasheddomains', domain('crashed-new.example', 'subdomain'));
      await holdAccounts(trx, 'an-interrupted-change-of-domains', 'panel', []);
    });
    assert.deepEqual(await recoverInterruptedCalls(h.services), [
      'crasheddomains: rows put back as they were before an interrupted change',
    ]);
    assert.deepEqual(await domainsOf(db, 'crasheddomains'), before);
  });
});
