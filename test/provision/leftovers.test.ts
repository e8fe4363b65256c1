// What an account leaves outside its home goes with it (CONTRACT §10), below a throwaway system
// root: files it owns in /tmp, /var/tmp and /dev/shm (and in other users' directories there), its
// crontab and its maildrop files; nothing of another user's, and no link followed.
import assert from 'node:assert/strict';
import {
  chmodSync,
  lchownSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ipcIdsOf, submittedBy } from '../../src/provision/linux/user/leftovers.ts';
import { findAccount } from '../../src/store/accounts.ts';
import { createAccount, forSuite } from '../helpers.ts';
import { linuxSetup } from './system-root.ts';

describe('removeacct removes what the account left outside its home', () => {
  const h = forSuite(linuxSetup);

  it('its files in the shared writable directories, its crontab and its maildrop files, nothing else', async () => {
    await createAccount(h, 'alice');
    await createAccount(h, 'bob');
    const alice = (await findAccount(h.services.store.db, 'alice'))!.uid!;
    const bob = (await findAccount(h.services.store.db, 'bob'))!.uid!;
    const at = (path: string) => join(h.root, path);
    const make = (path: string, uid: number, content: string | null = 'x') => {
      if (content === null) mkdirSync(at(path), { recursive: true });
      else writeFileSync(at(path), content);
      lchownSync(at(path), uid, uid);
    };
    for (const dir of [
      'tmp',
      'var/tmp',
      'dev/shm',
      'var/spool/cron/crontabs',
      'var/spool/postfix/maildrop',
      'etc/keep',
    ])
      mkdirSync(at(dir), { recursive: true });
    make('tmp/alice-file', alice);
    make('tmp/alice-dir', alice, null);
    make('tmp/alice-dir/bobs-inside', bob);
    // bob's directory every user may write, where alice put a file; and one only bob may write,
    // where she could not have (not walked: a large tree of others' costs the removal nothing).
    make('tmp/bob-dir', bob, null);
    chmodSync(at('tmp/bob-dir'), 0o1777);
    make('tmp/bob-dir/alice-inside', alice);
    make('tmp/bob-dir/bob-inside', bob);
    make('tmp/bob-own', bob, null);
    chmodSync(at('tmp/bob-own'), 0o755);
    make('tmp/bob-own/bob-file', bob);
    make('var/tmp/alice-cache', alice);
    make('dev/shm/alice-shm', alice);
    make('dev/shm/bob-shm', bob);
    make('etc/keep/precious', alice);
    // A link of alice's to a directory with her files: removed itself, never followed.
    symlinkSync(at('etc/keep'), at('tmp/alice-link'));
    lchownSync(at('tmp/alice-link'), alice, alice);
    symlinkSync(at('etc/keep'), at('tmp/bob-link'));
    lchownSync(at('tmp/bob-link'), bob, bob);
    make('var/spool/cron/crontabs/alice', alice, '* * * * * true\n');
    make('var/spool/cron/crontabs/bob', bob, '* * * * * true\n');
    make('var/spool/postfix/maildrop/A1B2C3', alice);
    make('var/spool/postfix/maildrop/D4E5F6', bob);

    assert.equal((await h.call('removeacct', { user: 'alice' })).statusCode, 200);
    const left = (dir: string) => {
      const found: string[] = [];
      const walk = (d: string, rel: string) => {
        for (const entry of readdirSync(at(d), { withFileTypes: true })) {
          found.push(`${rel}${entry.name}`);
          if (entry.isDirectory()) walk(join(d, entry.name), `${rel}${entry.name}/`);
        }
      };
      walk(dir, '');
      return found.sort();
    };
    assert.deepEqual(left('tmp'), [
      'bob-dir',
      'bob-dir/bob-inside',
      'bob-link',
      'bob-own',
      'bob-own/bob-file',
    ]);
    assert.deepEqual(left('var/tmp'), []);
    assert.deepEqual(left('dev/shm'), ['bob-shm']);
    assert.deepEqual(left('var/spool/cron/crontabs'), ['bob']);
    assert.deepEqual(left('var/spool/postfix/maildrop'), ['D4E5F6']);
    assert.equal(readFileSync(at('etc/keep/precious'), 'utf8'), 'x');
  });
});

describe('a queued message’s submitter', () => {
  it('is the uid in the first Received header, the one Postfix’s pickup wrote', () => {
    assert.equal(
      submittedBy(
        'Received: by mail.example.net (Postfix, from userid 10004)\n\tid 4XyZ; Mon, 1 Jan 2024 00:00:00 +0000 (UTC)\nReceived: by x (Postfix, from userid 10007)\nSubject: hi\n',
      ),
      10004,
    );
  });

  it('is nobody when the first Received header is not pickup’s, whatever a later one says', () => {
    assert.equal(
      submittedBy(
        'Received: from a.example (a.example [192.0.2.1])\n\tby mail.example.net (Postfix) with ESMTPS\nReceived: by x (Postfix, from userid 10004)\n',
      ),
      null,
    );
    assert.equal(submittedBy('Subject: no Received header\n'), null);
  });
});

describe('an account’s SysV IPC objects', () => {
  it('are those its uid owns or made, by the columns /proc/sysvipc names', () => {
    const shm = [
      '       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap',
      '1193415023          0   666              33554432  4242  4242      0 10004 10004 10004 10004          0          0 1700000000              33554432                     0',
      '         0          1   600                  4096   100   100      1 10007 10007 10007 10007          0          0 1700000000                  4096                     0',
      '         0          2   600                  4096   100   100      0 10007 10007 10004 10004          0          0 1700000000                  4096                     0',
    ].join('\n');
    assert.deepEqual(ipcIdsOf(shm, 10004), ['0', '2']);
    assert.deepEqual(ipcIdsOf(shm, 10007), ['1', '2']);
    const sem = [
      '       key      semid perms      nsems   uid   gid  cuid  cgid      otime      ctime',
      '         0      32768   666          4 10004 10004 10004 10004          0 1700000000',
    ].join('\n');
    assert.deepEqual(ipcIdsOf(sem, 10004), ['32768']);
    assert.deepEqual(ipcIdsOf(sem, 4), []);
    assert.deepEqual(ipcIdsOf('', 10004), []);
  });
});
