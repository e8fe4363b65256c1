// The mail tables kept in memory and changed one record at a time are, after any sequence of
// changes, what writing them whole from every record makes; a table changed on disk, or a record
// written by another process, is taken up at the next change (Postfix's, at the next lookup).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import type { LinuxContext } from '../../src/provision/linux/context.ts';
import { type MailDomain, POSTFIX_TABLES } from '../../src/provision/linux/mail/lines.ts';
import { mailTables } from '../../src/provision/linux/mail/tables.ts';
import { changeDovecotRows, dovecotRows, mailTablesContext } from './system-root.ts';

const USERS = ['ann', 'bea', 'cy'];
const DOMAINS = ['ann.example', 'ann-shop.example', 'bea.example', 'b.example', 'cy.example', 'zz.example'];
const HASH = '$6$salt$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./';
const GROUPS = { postfix: 110, postdrop: 111, dovecot: 112, opendkim: 113 };

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A system root with a user and group database, and a context the tables need of it. */
function systemRoot(): { root: string; ctx: LinuxContext } {
  const root = mkdtempSync(join(tmpdir(), 'berth-mail-tables-'));
  dirs.push(root);
  mkdirSync(join(root, 'etc'));
  writeShadow(root, new Map(USERS.map((user) => [user, HASH])));
  writeFileSync(
    join(root, 'etc/group'),
    Object.entries(GROUPS)
      .map(([name, gid]) => `${name}:x:${gid}:\n`)
      .join(''),
  );
  return { root, ctx: mailTablesContext(root) };
}

function writeShadow(root: string, hashes: ReadonlyMap<string, string>): void {
  writeFileSync(
    join(root, 'etc/shadow'),
    [...hashes].map(([user, hash]) => `${user}:${hash}:20000:0:99999:7:::\n`).join(''),
  );
}

const record: fc.Arbitrary<Shape> = fc.record({
  user: fc.constantFrom(...USERS),
  kind: fc.constantFrom(undefined, 'addon' as const, 'parked' as const),
  quota: fc.option(fc.integer({ min: 1, max: 9 }), { nil: null }),
  suspended: fc.boolean(),
  signed: fc.boolean(),
  mailboxes: fc.subarray(['info', 'sales']),
  forwarders: fc.subarray(['team', 'all']),
});

/** A change: a domain's record written or removed, or an account's password changed (and its records written again). */
const change = fc.oneof(
  fc.record({ put: fc.constantFrom(...DOMAINS), as: record }),
  fc.record({ remove: fc.constantFrom(...DOMAINS) }),
  fc.record({ passwd: fc.constantFrom(...USERS), locked: fc.boolean() }),
);

/** What a generated record says. */
interface Shape {
  user: string;
  kind: 'addon' | 'parked' | undefined;
  quota: number | null;
  suspended: boolean;
  signed: boolean;
  mailboxes: string[];
  forwarders: string[];
}

function mailDomain(domain: string, r: Shape): MailDomain {
  return {
    user: r.user,
    domain,
    ...(r.kind && { kind: r.kind }),
    uid: 1000 + USERS.indexOf(r.user),
    gid: 1000 + USERS.indexOf(r.user),
    home: `/home/${r.user}`,
    quota: r.quota,
    suspended: r.suspended,
    dkimKey: r.signed ? `/etc/berth/dkim/${domain}.key` : null,
    mailboxes: r.mailboxes.map((local) => ({ local, hash: HASH, quota: null })),
    forwarders: r.forwarders.map((local) => ({ local, to: [`${local}@elsewhere.example`] })),
  };
}

const text = (r: MailDomain | null) => r && `${JSON.stringify(r, null, 2)}\n`;

/** A table's lines, sorted. */
const lineSet = (table: string) => table.split('\n').filter(Boolean).sort();

/** A plain record: no quota, suspension, key, mailbox or forwarder. */
const plain = (domain: string, user: string, kind?: 'addon') =>
  mailDomain(domain, {
    user,
    kind,
    quota: null,
    suspended: false,
    signed: false,
    mailboxes: [],
    forwarders: [],
  });

describe('mail tables', () => {
  it('changed one record at a time are what writing them whole from every record makes', () => {
    fc.assert(
      fc.property(fc.array(change, { maxLength: 25 }), (changes) => {
        const { root, ctx } = systemRoot();
        const kept = mailTables(ctx);
        kept.writeTables();
        const hashes = new Map(USERS.map((user) => [user, HASH]));
        const records = new Map<string, MailDomain>();
        for (const c of changes) {
          if ('put' in c) {
            const r = mailDomain(c.put, c.as);
            records.set(c.put, r);
            kept.putRecord(c.put, text(r), 0o600);
          } else if ('remove' in c) {
            records.delete(c.remove);
            kept.putRecord(c.remove, null, 0o600);
          } else {
            hashes.set(c.passwd, c.locked ? `!${HASH}` : HASH.replace('salt', `s${hashes.size}`));
            writeShadow(root, hashes);
            for (const [domain, r] of records)
              if (r.user === c.passwd) kept.putRecord(domain, text(r), 0o600);
          }
          // Another instance, reading every record afresh, writes every table with the same lines
          // (Dovecot's rows the same too), the accounts in the order of their names where the
          // tables written in parts have a new account's last.
          const rows = () => [dovecotRows(root, 'logins'), dovecotRows(root, 'users')];
          const files = () => Object.values(kept.tables).map((file) => lineSet(readFileSync(file, 'utf8')));
          const before = rows();
          // The file holds what this instance holds (in the order of the last writer: the fresh
          // instance of the turn before may have written it since).
          assert.deepEqual(
            lineSet(readFileSync(kept.tables.localSenders, 'utf8')),
            lineSet(kept.text('localSenders')),
          );
          const inParts = files();
          const fresh = mailTables(ctx);
          fresh.writeTables();
          assert.deepEqual(files(), inParts);
          for (const table of POSTFIX_TABLES) {
            assert.deepEqual(lineSet(kept.text(table)), lineSet(fresh.text(table)), table);
            // Every entry is what a lookup answers, by any case of its key; of a key given twice
            // (an account with two main domains' records), the first.
            const seen = new Set<string>();
            for (const line of fresh.text(table).split('\n').filter(Boolean)) {
              const [key, value] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
              if (seen.has(key)) continue;
              seen.add(key);
              assert.equal(kept.lookup(table, key.toUpperCase()), value, `${table}: ${key}`);
            }
          }
          fresh.database.close();
          assert.deepEqual(rows(), before);
        }
        // What was once a key and is one no more is answered as none.
        for (const domain of DOMAINS)
          if (!records.has(domain)) assert.equal(kept.lookup('domains', domain), null, domain);
        const { tables } = kept;
        kept.database.close();
        assert.equal(statSync(kept.database.path).gid, GROUPS.dovecot);
        assert.equal(statSync(kept.database.path).mode & 0o777, 0o640);
        assert.equal(statSync(tables.keys).mode & 0o777, 0o640);
        assert.equal(statSync(tables.keys).gid, GROUPS.opendkim);
        // postdrop reads local-senders as the account, with its group alone.
        assert.equal(statSync(tables.localSenders).gid, GROUPS.postdrop);
        assert.equal(statSync(tables.localSenders).mode & 0o777, 0o640);
      }),
      { numRuns: 60 },
    );
  });

  it('answer Postfix in a process that has only read the records (the doctor)', () => {
    const { ctx } = systemRoot();
    mailTables(ctx).putRecord('ann.example', text(plain('ann.example', 'ann')), 0o600);
    const doctor = mailTables(ctx);
    assert.equal(doctor.records().length, 1);
    assert.equal(doctor.text('domains'), 'ann.example OK\n');
    assert.equal(doctor.lookup('domains', 'ann.example'), 'OK');
    doctor.database.close();
  });

  it('list a new account’s lines last, and the accounts by name when read afresh, each account’s records in the order of their files', () => {
    const { ctx } = systemRoot();
    const kept = mailTables(ctx);
    const put = (domain: string, user: string, kind?: 'addon') =>
      kept.putRecord(domain, text(plain(domain, user, kind)), 0o600);
    const senders = () => statSync(kept.tables.localSenders).ino;
    put('cy.example', 'cy');
    const file = senders();
    put('ann.example', 'ann');
    // A new account's line is added to the file in place; a changed one's makes a new file.
    assert.equal(senders(), file);
    assert.equal(
      readFileSync(kept.tables.localSenders, 'utf8'),
      'cy cy, @cy.example\nann ann, @ann.example\n',
    );
    put('ann-shop.example', 'ann', 'addon');
    assert.notEqual(senders(), file);
    assert.equal(kept.text('domains'), 'cy.example OK\nann-shop.example OK\nann.example OK\n');
    const senderLines = 'cy cy, @cy.example\nann ann, @ann.example, @ann-shop.example\n';
    assert.equal(kept.text('localSenders'), senderLines);
    assert.equal(readFileSync(kept.tables.localSenders, 'utf8'), senderLines);
    const fresh = mailTables(ctx);
    assert.equal(fresh.text('domains'), 'ann-shop.example OK\nann.example OK\ncy.example OK\n');
    fresh.database.close();
    assert.equal(kept.loginHash('ann'), HASH);
    assert.equal(kept.loginHash('bea'), null);
  });

  it('give no login to an account whose password is locked or empty (passwd -d), and write the rest', () => {
    const { root, ctx } = systemRoot();
    const kept = mailTables(ctx);
    for (const [user, hash] of [
      ['ann', ''],
      ['bea', `!${HASH}`],
      ['cy', HASH],
    ] as const)
      kept.putRecord(`${user}.example`, text(plain(`${user}.example`, user)), 0o600, new Map([[user, hash]]));
    assert.equal(dovecotRows(root, 'logins'), `cy\t${HASH}\tcy\ncy@cy.example\t${HASH}\tcy\n`);
    // Every account is still a user mail is delivered to; a fresh start writes the same rows.
    assert.match(dovecotRows(root, 'users'), /^ann\t/m);
    const fresh = mailTables(ctx);
    fresh.writeTables(
      new Map([
        ['ann', ''],
        ['bea', `!${HASH}`],
      ]),
    );
    fresh.database.close();
    assert.equal(dovecotRows(root, 'logins'), `cy\t${HASH}\tcy\ncy@cy.example\t${HASH}\tcy\n`);
  });

  it('write again a table changed on disk, and take up a record another process wrote', () => {
    const { root, ctx } = systemRoot();
    const kept = mailTables(ctx);
    const other = mailTables(ctx);
    const r = (domain: string, user: string) => text({ ...plain(domain, user), dkimKey: `/k/${domain}` });
    kept.putRecord('ann.example', r('ann.example', 'ann'), 0o600);
    writeFileSync(kept.tables.signing, '*@evil.example default._domainkey.evil.example\n');
    other.putRecord('bea.example', r('bea.example', 'bea'), 0o600);
    // The records read (as the doctor reads them) are not yet the tables made from them.
    assert.deepEqual(
      kept.records().map((record) => record.domain),
      ['ann.example', 'bea.example'],
    );
    // Postfix's answer at once, the next lookup after another process wrote.
    assert.equal(kept.lookup('domains', 'bea.example'), 'OK');
    assert.equal(kept.lookup('senders', '@bea.example'), 'bea, bea@bea.example');
    kept.putRecord('cy.example', r('cy.example', 'cy'), 0o600);
    assert.equal(kept.text('domains'), 'ann.example OK\nbea.example OK\ncy.example OK\n');
    assert.doesNotMatch(readFileSync(kept.tables.signing, 'utf8'), /evil/);
    assert.match(readFileSync(kept.tables.signing, 'utf8'), /^\*@bea\.example /m);
    // Dovecot's rows deleted by another process: the next change writes every row again.
    changeDovecotRows(root, 'DELETE FROM users');
    kept.putRecord('zz.example', r('zz.example', 'cy'), 0o600);
    assert.match(dovecotRows(root, 'users'), /^bea\t1001\t1001\t\/home\/bea\t$/m);
    assert.match(dovecotRows(root, 'users'), /^cy@zz\.example\t/m);
  });

  it('leave nothing of a removed account in Dovecot’s database, however many rows it holds', () => {
    const { root, ctx } = systemRoot();
    const kept = mailTables(ctx);
    const users = Array.from({ length: 400 }, (_, i) => `user${String(i).padStart(3, '0')}`);
    for (const user of users)
      kept.putRecord(
        `${user}.example`,
        text({
          ...mailDomain(`${user}.example`, {
            user: 'ann',
            kind: undefined,
            quota: 5,
            suspended: false,
            signed: false,
            mailboxes: ['info', 'sales'],
            forwarders: [],
          }),
          user,
        }),
        0o600,
        new Map([[user, HASH]]),
      );
    // Many pages, with logins as dividers in the inner ones.
    assert.ok(statSync(kept.database.path).size > 64 * 1024);
    kept.putRecord('user200.example', null, 0o600);
    assert.doesNotMatch(dovecotRows(root, 'logins') + dovecotRows(root, 'users'), /user200/);
    assert.match(dovecotRows(root, 'logins'), /^user201@user201\.example\t/m);
    // Neither in the database nor in its log, while it is open.
    for (const file of [kept.database.path, `${kept.database.path}-wal`])
      assert.equal(existsSync(file) && readFileSync(file).includes('user200'), false, file);
    kept.database.close();
  });
});
