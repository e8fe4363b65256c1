// The mail tables' part of a change, measured alone: a new account's mail domain written into the
// tables at 10,000 mail domains against the same at 100, in the same run. Postfix's tables are
// served from memory; postdrop's and OpenDKIM's table files are made from each account's lines kept
// in memory, and a new account's lines are appended to them. Dovecot's are rows of a database, the
// account's alone written. The shadow file here is written by the bench, not by Berth's user
// database: the new user's hash is searched for through the whole file, as Berth does for a file
// another program wrote.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LinuxContext } from '../src/provision/linux/context.ts';
import type { MailDomain } from '../src/provision/linux/mail/lines.ts';
import { mailTables } from '../src/provision/linux/mail/tables.ts';
import { mailTablesContext } from '../test/provision/system-root.ts';

const HASH = `$6$${'s'.repeat(16)}$${'h'.repeat(86)}`;
const CHANGES = 40;

function domain(i: number): MailDomain {
  return {
    user: `u${i}`,
    domain: `d${i}.example`,
    uid: 2000 + i,
    gid: 2000 + i,
    home: `/home/u${i}`,
    quota: 1024,
    suspended: false,
    dkimKey: `/etc/berth/dkim/d${i}.example.key`,
    mailboxes: [],
    forwarders: [],
  };
}

/** A system root holding `count` mail domains and their users, its tables written. */
function filled(count: number): { root: string; ctx: LinuxContext } {
  const root = mkdtempSync(join(tmpdir(), 'berth-bench-mail-'));
  mkdirSync(join(root, 'etc/berth/mail'), { recursive: true });
  let shadow = '';
  let group = 'postfix:x:110:\npostdrop:x:111:\ndovecot:x:112:\nopendkim:x:113:\n';
  for (let i = 0; i < count + CHANGES; i++) {
    shadow += `u${i}:${HASH}:20000:0:99999:7:::\n`;
    group += `u${i}:x:${2000 + i}:\n`;
  }
  writeFileSync(join(root, 'etc/shadow'), shadow);
  writeFileSync(join(root, 'etc/group'), group);
  for (let i = 0; i < count; i++)
    writeFileSync(join(root, `etc/berth/mail/d${i}.example.json`), JSON.stringify(domain(i)));
  return { root, ctx: mailTablesContext(root) };
}

/** The median CPU time (user and system, ms) of writing one new account's mail domain into the tables. */
export function mailTableChange(count: number): number {
  const { root, ctx } = filled(count);
  try {
    const tables = mailTables(ctx);
    tables.writeTables();
    const spent: number[] = [];
    for (let i = count; i < count + CHANGES; i++) {
      const before = process.cpuUsage();
      tables.loginHash(`u${i}`);
      tables.putRecord(`d${i}.example`, JSON.stringify(domain(i)), 0o600);
      const { user, system } = process.cpuUsage(before);
      spent.push((user + system) / 1000);
    }
    return spent.sort((a, b) => a - b)[Math.floor(spent.length / 2)]!;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
