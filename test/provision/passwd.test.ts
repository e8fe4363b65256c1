// Looking up one user in the user database keeps nothing of the file's text: the mail tables keep
// each account's hash, and a hash that held on to the shadow file it was read from kept a copy of
// that file for every account (4 GB of Berth's heap near 10,000 accounts). An entry found once is
// kept only while the file stays the same, so whatever replaces the file (Berth's own rewrite,
// useradd, an administrator's vipw) is what the next look-up sees, a name missing before included.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { findSystemUser, shadowPassword } from '../../src/provision/linux/passwd.ts';
import { userDatabase } from '../../src/provision/linux/user/database.ts';
import { tempDir } from '../helpers.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A root whose /etc holds copies of this system's user database and login.defs. */
function systemCopy(): string {
  const root = tempDir('berth-passwd-');
  mkdirSync(join(root, 'etc'));
  for (const file of ['passwd', 'shadow', 'group', 'gshadow', 'login.defs'])
    copyFileSync(`/etc/${file}`, join(root, 'etc', file));
  return root;
}

describe("the user database's look-ups", () => {
  it('keep no copy of the file they read a hash from', () => {
    const root = tempDir('berth-passwd-');
    dirs.push(root);
    // 200 look-ups, each in a new 1 MB shadow file, their hashes kept: a few KB, or 200 MB.
    const script = `
      import { mkdirSync, writeFileSync } from 'node:fs';
      import { shadowPassword } from ${JSON.stringify(new URL('../../src/provision/linux/passwd.ts', import.meta.url).href)};
      const root = ${JSON.stringify(root)};
      mkdirSync(root + '/etc', { recursive: true });
      const kept = [];
      gc();
      const before = process.memoryUsage().heapUsed;
      for (let round = 0; round < 200; round++) {
        const lines = [];
        for (let i = 0; i < 10000; i++) lines.push('user' + i + ':$6$' + round + 'salt$' + 'h'.repeat(86) + ':20000:0:99999:7:::');
        writeFileSync(root + '/etc/shadow', lines.join('\\n') + '\\n');
        kept.push(shadowPassword(root, 'user' + (round * 37) % 10000));
      }
      gc();
      console.log(Math.round((process.memoryUsage().heapUsed - before) / 1e6), kept.length);
    `;
    const said = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    const [grown, kept] = said.trim().split(' ').map(Number);
    assert.equal(kept, 200);
    assert.ok(grown! < 20, `the heap grew by ${grown} MB keeping 200 hashes`);
  });
});

describe('the user database read by name', () => {
  const root = tempDir('berth-passwd-');
  after(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'etc'));
  /** Replaces the file as the user database's tools do: a new file renamed over it. */
  const replace = (file: string, text: string) => {
    writeFileSync(join(root, 'etc', `${file}+`), text);
    renameSync(join(root, 'etc', `${file}+`), join(root, 'etc', file));
  };

  it('finds each name, again and again, and never a line by a part of it', () => {
    replace(
      'passwd',
      'root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001:alice.example:/home/alice:/bin/sh\n',
    );
    replace('shadow', 'root:*:19000::::::\nalice:$6$salt$hash:19000::::::\n');
    for (let i = 0; i < 3; i++) {
      assert.equal(findSystemUser(root, 'alice')?.uid, 1001);
      assert.equal(findSystemUser(root, 'alice')?.home, '/home/alice');
      assert.equal(shadowPassword(root, 'alice'), '$6$salt$hash');
    }
    assert.equal(findSystemUser(root, 'root')?.uid, 0);
    for (const name of ['ali', 'lice', 'bob', '', 'alice:x', 'a\nb', '#root'])
      assert.equal(findSystemUser(root, name), undefined, name);
  });

  it('sees the file as it is after it was replaced: a changed entry, a new name, a name gone', () => {
    assert.equal(findSystemUser(root, 'bob'), undefined);
    replace(
      'passwd',
      'root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001:alice.example:/home/alice:/usr/sbin/nologin\nbob:x:1002:1002:bob.example:/home/bob:/bin/sh\n',
    );
    assert.equal(findSystemUser(root, 'bob')?.uid, 1002, 'a name missing before is found');
    assert.equal(findSystemUser(root, 'alice')?.shell, '/usr/sbin/nologin', 'a changed line is read anew');
    replace('passwd', 'root:x:0:0:root:/root:/bin/bash\nbob:x:1002:1002:bob.example:/home/bob:/bin/sh\n');
    assert.equal(findSystemUser(root, 'alice'), undefined, 'a name removed is gone');
    replace('shadow', 'root:*:19000::::::\nalice:!$6$salt$hash:19000::::::\n');
    assert.equal(shadowPassword(root, 'alice'), '!$6$salt$hash');
  });

  it('after users were added at the end of the file in place, finds them, and the rest as before', async () => {
    const ours = systemCopy();
    try {
      const database = userDatabase(ours);
      const add = (user: string, uid: number) =>
        database.add({
          user,
          uid,
          gecos: '',
          home: `/home/${user}`,
          shell: '/bin/sh',
          groups: [],
          hash: '!',
        });
      const inode = () => statSync(join(ours, 'etc/passwd')).ino;
      const file = inode();
      for (const name of ['pwa', 'pwb']) assert.equal(findSystemUser(ours, name), undefined, name);
      assert.equal(findSystemUser(ours, 'root')?.uid, 0);
      await add('pwa', 3601);
      assert.equal(inode(), file, 'appended to in place');
      assert.equal(
        findSystemUser(ours, 'pwa')?.uid,
        3601,
        'a name missing before is found in the lines added',
      );
      assert.equal(findSystemUser(ours, 'pwb'), undefined);
      assert.equal(findSystemUser(ours, 'root')?.uid, 0, 'a line found before stays');
      assert.equal(
        findSystemUser(ours, 'daemon')?.uid,
        1,
        'a name not looked for before is found before them',
      );
      await add('pwb', 3602);
      await add('pwc', 3603);
      // pwc was never looked for, pwb was missing two versions ago: both are found.
      assert.equal(findSystemUser(ours, 'pwb')?.uid, 3602);
      assert.equal(findSystemUser(ours, 'pwc')?.uid, 3603);
      assert.equal(findSystemUser(ours, 'pwa')?.uid, 3601);
      assert.equal(shadowPassword(ours, 'pwc'), '!');
      // Replaced by another tool: read afresh.
      execFileSync('/usr/sbin/usermod', ['--prefix', ours, '-s', '/bin/false', 'pwa'], { stdio: 'pipe' });
      assert.notEqual(inode(), file);
      assert.equal(findSystemUser(ours, 'pwa')?.shell, '/bin/false');
      assert.equal(findSystemUser(ours, 'pwc')?.uid, 3603);
    } finally {
      rmSync(ours, { recursive: true, force: true });
    }
  });

  it('finds every user added in place, one rewrite at a time, the new lines searched apart until they are many', async () => {
    const ours = systemCopy();
    try {
      const database = userDatabase(ours);
      const name = (i: number) => `pw${i}`;
      const inode = statSync(join(ours, 'etc/passwd')).ino;
      // 2 KB lines: 160 of them are more than the lines searched apart (256 KB).
      const gecos = (i: number) => `${i}`.padEnd(2_000, 'x');
      for (let i = 0; i < 160; i++) {
        // Asked for before it exists, as createacct asks whether the name is taken.
        assert.equal(findSystemUser(ours, name(i)), undefined);
        await database.add({
          user: name(i),
          uid: 20_000 + i,
          gecos: gecos(i),
          home: `/home/${name(i)}`,
          shell: '/bin/sh',
          groups: [],
          hash: `$6$s${i}$h`,
        });
        if (i % 2 === 1) continue;
        assert.equal(findSystemUser(ours, name(i))?.gecos, gecos(i));
        assert.equal(shadowPassword(ours, name(i)), `$6$s${i}$h`);
        // Never asked for since they were added, one and five rewrites ago.
        for (const earlier of [i - 1, i - 9].filter((n) => n >= 0))
          assert.equal(findSystemUser(ours, name(earlier))?.uid, 20_000 + earlier, name(earlier));
      }
      assert.equal(statSync(join(ours, 'etc/passwd')).ino, inode, 'appended to in place throughout');
      for (let i = 0; i < 160; i++) assert.equal(findSystemUser(ours, name(i))?.gecos, gecos(i));
      assert.equal(findSystemUser(ours, 'root')?.uid, 0);
      for (const missing of ['pw160', 'pw', 'w1', '1:x'])
        assert.equal(findSystemUser(ours, missing), undefined);
    } finally {
      rmSync(ours, { recursive: true, force: true });
    }
  });
});
