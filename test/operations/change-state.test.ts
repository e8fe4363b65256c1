// What every state-changing call shares: its audit entry commits with it, its system steps are
// journalled while they run, and a conflict with another server is retried.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { findAccount } from '../../src/store/accounts.ts';
import { countAudit } from '../../src/store/audit.ts';
import { errorOf, type Harness, recordingDriver, setup } from '../helpers.ts';

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
});
