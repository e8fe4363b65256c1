// The user database edited by Berth a burst at a time (createacct's users, suspension's edits): each
// as useradd, chpasswd or usermod writes it, under the locks the shadow tools take; one refused
// leaves the rest of its burst.
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  type NewUser,
  passwordLock,
  type UserEdit,
  userDatabase,
} from '../../src/provision/linux/user/database.ts';
import { tempDir } from '../helpers.ts';

const FILES = ['passwd', 'shadow', 'group', 'gshadow'];
const USERS = ['udb1', 'udb2', 'udb3', 'udb4', 'udb5', 'udb6'];
const HASH = '$6$salt$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789./';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const prefixed = (root: string, command: string, args: string[]) =>
  execFileSync(`/usr/sbin/${command}`, ['--prefix', root, ...args], { stdio: 'pipe' });

/** useradd as Berth's accounts were made with it: no home made, a group of its own, no subordinate ids. */
const useradd = (root: string, args: string[]) =>
  prefixed(root, 'useradd', ['-K', 'SUB_UID_COUNT=0', '-K', 'SUB_GID_COUNT=0', '-M', '-U', ...args]);

/** A root with this machine's user database and users made by useradd, one without a password. */
function systemRoot(): string {
  const root = tempDir('berth-user-db-');
  dirs.push(root);
  mkdirSync(join(root, 'etc'));
  for (const file of [...FILES, 'login.defs', 'subuid', 'subgid'])
    cpSync(`/etc/${file}`, join(root, 'etc', file), { preserveTimestamps: true });
  for (const file of ['shadow', 'gshadow'])
    execFileSync('/usr/bin/chgrp', ['shadow', join(root, 'etc', file)]);
  for (const group of ['udb-ssh', 'udb-sftp']) prefixed(root, 'groupadd', [group]);
  for (const [i, user] of USERS.entries()) {
    useradd(root, ['-G', 'udb-ssh', '-s', '/bin/sh', user]);
    if (i > 0) prefixed(root, 'usermod', ['-p', `${HASH}${i}`, user]);
  }
  return root;
}

const read = (root: string) => FILES.map((file) => readFileSync(join(root, 'etc', file), 'utf8'));

const usermodArgs = (edit: UserEdit) => [
  edit.locked ? '-L' : '-U',
  '-s',
  edit.shell,
  ...(edit.groups ? ['-G', edit.groups.join(',')] : []),
  edit.user,
];

/** Holds glibc's lckpwdf lock of the root, as a shadow tool does, until `release`. */
async function holdLock(root: string): Promise<{ release: () => Promise<void> }> {
  const holder: ChildProcess = spawn(
    '/usr/bin/perl',
    [
      '-e',
      'use Fcntl; open(my $f, ">>", $ARGV[0]) or die; my $r = pack("ssx4qqix4", F_WRLCK, 0, 0, 0, 0); fcntl($f, F_SETLKW, $r) or die; $| = 1; print "held\\n"; 1 while <STDIN>;',
      join(root, 'etc/.pwd.lock'),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => holder.stdout!.once('data', resolve));
  return {
    release: () =>
      new Promise((resolve) => {
        holder.once('exit', () => resolve());
        holder.stdin!.end();
      }),
  };
}

describe('the user database, edited a burst at a time', () => {
  it('writes a burst of suspensions and unsuspensions as usermod writes each, the files kept as they were', async () => {
    const ours = systemRoot();
    const theirs = tempDir('berth-user-db-');
    dirs.push(theirs);
    cpSync(ours, theirs, { recursive: true, preserveTimestamps: true });
    const edits: UserEdit[] = [
      { user: 'udb1', locked: true, shell: '/usr/sbin/nologin', groups: [] },
      { user: 'udb2', locked: true, shell: '/usr/sbin/nologin', groups: ['udb-sftp'] },
      { user: 'udb3', locked: true, shell: '/bin/false' },
      { user: 'udb4', locked: false, shell: '/bin/sh', groups: ['udb-ssh', 'udb-sftp'] },
      { user: 'udb5', locked: true, shell: '/usr/sbin/nologin', groups: ['udb-ssh'] },
    ];
    // udb1 has no password: unlocked, it stays locked. udb5 locked twice keeps one `!`.
    const again: UserEdit[] = [
      { user: 'udb1', locked: false, shell: '/bin/sh', groups: ['udb-ssh'] },
      { user: 'udb5', locked: true, shell: '/usr/sbin/nologin', groups: [] },
      { user: 'udb2', locked: false, shell: '/bin/sh', groups: ['udb-ssh'] },
    ];
    const modes = FILES.map((file) => statSync(join(ours, 'etc', file)));
    const database = userDatabase(ours);
    await Promise.all(edits.map((edit) => database.edit(edit)));
    await Promise.all(again.map((edit) => database.edit(edit)));
    for (const edit of [...edits, ...again]) prefixed(theirs, 'usermod', usermodArgs(edit));
    assert.deepEqual(read(ours), read(theirs));
    const shadow = read(ours)[1]!;
    assert.match(shadow, /^udb1:!:/m);
    assert.match(shadow, /^udb5:!\$6\$/m);
    assert.match(shadow, /^udb2:\$6\$/m);
    for (const [i, file] of FILES.entries()) {
      const now = statSync(join(ours, 'etc', file));
      assert.deepEqual([now.mode, now.uid, now.gid], [modes[i]!.mode, modes[i]!.uid, modes[i]!.gid], file);
    }
  });

  it('writes any run of bursts as usermod writes each edit, a line changed where it stands', async () => {
    // Each rewrite cuts the lines it changed out of the text it wrote last: shells of other
    // lengths, locks put on and taken off, member lists grown and cut, in bursts of any size.
    const edit = fc.record({
      user: fc.constantFrom(...USERS),
      locked: fc.boolean(),
      shell: fc.constantFrom('/bin/sh', '/usr/sbin/nologin', '/bin/false', '/bin/bash'),
      groups: fc.option(fc.subarray(['udb-ssh', 'udb-sftp']), { nil: undefined }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(edit, { minLength: 1, maxLength: 4 }), { maxLength: 4 }),
        async (bursts) => {
          const ours = systemRoot();
          const theirs = tempDir('berth-user-db-');
          dirs.push(theirs);
          cpSync(ours, theirs, { recursive: true, preserveTimestamps: true });
          const database = userDatabase(ours);
          for (const burst of bursts) {
            await Promise.all(burst.map((change) => database.edit(change)));
            for (const change of burst) prefixed(theirs, 'usermod', usermodArgs(change));
            assert.deepEqual(read(ours), read(theirs));
          }
        },
      ),
      { numRuns: 12 },
    );
  });

  it('keeps what the shadow tools wrote between two of its rewrites, however soon after the last', async () => {
    const ours = systemRoot();
    const theirs = tempDir('berth-user-db-');
    dirs.push(theirs);
    cpSync(ours, theirs, { recursive: true, preserveTimestamps: true });
    const database = userDatabase(ours);
    const steps: (UserEdit | [string, string[]])[] = [
      { user: 'udb1', locked: true, shell: '/usr/sbin/nologin', groups: [] },
      ['usermod', ['-s', '/bin/bash', 'udb2']],
      { user: 'udb2', locked: true, shell: '/usr/sbin/nologin', groups: ['udb-sftp'] },
      ['groupadd', ['udb-late']],
      [
        'useradd',
        ['-K', 'SUB_UID_COUNT=0', '-K', 'SUB_GID_COUNT=0', '-M', '-U', '-G', 'udb-late', 'udblate'],
      ],
      { user: 'udblate', locked: true, shell: '/usr/sbin/nologin', groups: ['udb-late', 'udb-ssh'] },
      { user: 'udb1', locked: false, shell: '/bin/sh', groups: ['udb-late'] },
      ['usermod', ['-L', 'udb3']],
      { user: 'udb3', locked: false, shell: '/bin/sh' },
    ];
    for (const step of steps) {
      if (Array.isArray(step)) {
        // Each tool, with the same arguments, on both roots: Berth's view of ours is then stale.
        for (const root of [ours, theirs]) prefixed(root, step[0], step[1]);
      } else {
        await database.edit(step);
        prefixed(theirs, 'usermod', usermodArgs(step));
      }
    }
    // The clock of the shadow line useradd wrote is the same day in both.
    assert.deepEqual(read(ours), read(theirs));
    // A file replaced with one of the very same size and times (another inode) is read again too.
    const shadowPath = join(ours, 'etc', 'shadow');
    const before = statSync(shadowPath);
    const edited = readFileSync(shadowPath, 'utf8').replace(/^udb4:\$6\$/m, 'udb4:X6$');
    assert.equal(edited.length, before.size);
    writeFileSync(`${shadowPath}.new`, edited, { mode: before.mode });
    execFileSync('/usr/bin/chgrp', ['shadow', `${shadowPath}.new`]);
    execFileSync('/usr/bin/touch', ['-r', shadowPath, `${shadowPath}.new`]);
    execFileSync('/usr/bin/mv', [`${shadowPath}.new`, shadowPath]);
    await database.edit({ user: 'udb5', locked: true, shell: '/bin/false' });
    assert.match(read(ours)[1]!, /^udb4:X6\$/m);
    assert.match(read(ours)[1]!, /^udb5:!\$6\$/m);
  });

  it('adds a burst of users as useradd -U -G and chpasswd -e add each, and refuses a name or id the system has', async () => {
    const ours = systemRoot();
    // Entries of NIS (compat) stay last: new lines go before them, as the shadow tools put them.
    appendFileSync(join(ours, 'etc/passwd'), '+::::::\n');
    appendFileSync(join(ours, 'etc/group'), '+:::\n');
    const theirs = tempDir('berth-user-db-');
    dirs.push(theirs);
    cpSync(ours, theirs, { recursive: true, preserveTimestamps: true });
    const users: NewUser[] = [
      {
        user: 'udn1',
        uid: 3101,
        gecos: 'Berth udn1.example',
        home: '/home/udn1',
        shell: '/usr/sbin/nologin',
        groups: ['udb-ssh'],
        hash: `${HASH}a`,
      },
      {
        user: 'udn2',
        uid: 3102,
        gecos: 'Berth udn2.example',
        home: '/home/udn2',
        shell: '/bin/sh',
        groups: ['udb-ssh', 'udb-sftp'],
        hash: '!',
      },
      {
        user: 'udn3',
        uid: null,
        gecos: 'Berth udn3.example',
        home: '/home/udn3',
        shell: '/bin/sh',
        groups: [],
        hash: `${HASH}c`,
      },
    ];
    const database = userDatabase(ours);
    const inode = (file: string) => statSync(join(ours, 'etc', file)).ino;
    const inodes = FILES.map(inode);
    await Promise.all(users.map((user) => database.add(user)));
    // shadow gained lines at its end alone: appended to in place (the same file). passwd, whose NIS
    // entry stays last, and group and gshadow, whose udb-ssh and udb-sftp gained members, are new.
    assert.deepEqual(
      FILES.map((file, i) => inode(file) === inodes[i]),
      [false, true, false, false],
    );
    for (const user of users) {
      useradd(theirs, [
        ...(user.uid === null ? [] : ['-u', String(user.uid)]),
        ...(user.groups.length > 0 ? ['-G', user.groups.join(',')] : []),
        '-d',
        user.home,
        '-s',
        user.shell,
        '-c',
        user.gecos,
        user.user,
      ]);
      if (user.hash !== '!')
        execFileSync('/usr/sbin/chpasswd', ['-e', '-R', theirs], { input: `${user.user}:${user.hash}\n` });
    }
    assert.deepEqual(read(ours), read(theirs));
    assert.equal(readFileSync(join(ours, 'etc/subuid'), 'utf8'), readFileSync('/etc/subuid', 'utf8'));

    prefixed(ours, 'groupadd', ['-g', '3300', 'udb-only']);
    const before = read(ours);
    const refused = await Promise.allSettled([
      database.add({ ...users[0]!, uid: 3201 }),
      database.add({ ...users[0]!, user: 'udn4' }),
      database.add({ ...users[0]!, user: 'udb-sftp', uid: 3202 }),
      database.add({ ...users[0]!, user: 'udn5', uid: 3300 }),
      database.add({ ...users[0]!, user: 'udn6', uid: 3203, groups: ['udb-nosuch'] }),
      database.add({ ...users[0]!, user: 'udn7', uid: 3204, gecos: 'Berth a:b' }),
      database.add({ ...users[0]!, user: 'udn8', uid: 3205, hash: `${HASH}\nroot::0:0::/:/bin/sh` }),
    ]);
    assert.deepEqual(
      refused.map((outcome) => (outcome.status === 'rejected' ? String(outcome.reason) : 'written')),
      [
        "Error: 'udn1' is in /etc/passwd already",
        'Error: user id 3101 is taken',
        "Error: 'udb-sftp' is in /etc/group already",
        'Error: group id 3300 is taken',
        "Error: group 'udb-nosuch' does not exist",
        'Error: refusing a user udn7 with a field that would leave its line',
        'Error: refusing a user udn8 with a field that would leave its line',
      ],
    );
    assert.deepEqual(read(ours), before);
  });

  it('refuses an edit of a user or group the system lacks, and writes the rest of its burst', async () => {
    const root = systemRoot();
    const before = read(root);
    const database = userDatabase(root);
    const outcomes = await Promise.allSettled([
      database.edit({ user: 'udb1', locked: true, shell: '/usr/sbin/nologin' }),
      database.edit({ user: 'nosuchudb', locked: true, shell: '/usr/sbin/nologin' }),
      database.edit({ user: 'udb2', locked: true, shell: '/usr/sbin/nologin', groups: ['udb-nosuch'] }),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected', 'rejected'],
    );
    assert.match(String((outcomes[1] as PromiseRejectedResult).reason), /user 'nosuchudb' does not exist/);
    assert.match(String((outcomes[2] as PromiseRejectedResult).reason), /group 'udb-nosuch' does not exist/);
    const [passwd, shadow, group] = read(root);
    assert.match(passwd!, /^udb1:.*:\/usr\/sbin\/nologin$/m);
    assert.match(passwd!, /^udb2:.*:\/bin\/sh$/m);
    assert.match(shadow!, /^udb2:\$6\$/m);
    assert.equal(group, before[2]);
  });

  it("holds glibc's lckpwdf lock: chpasswd waits for it", async () => {
    const root = systemRoot();
    const lock = passwordLock(join(root, 'etc/.pwd.lock'));
    let release = await lock.hold();
    const chpasswd = spawn('/usr/sbin/chpasswd', ['-e', '-R', root], { stdio: ['pipe', 'ignore', 'pipe'] });
    const ended = new Promise<number | null>((resolve) => chpasswd.once('exit', resolve));
    chpasswd.stdin.end(`udb2:${HASH}z\n`);
    const early = await Promise.race([
      ended,
      new Promise((resolve) => setTimeout(() => resolve('waiting'), 700)),
    ]);
    assert.equal(early, 'waiting');
    assert.doesNotMatch(read(root)[1]!, /z:/);
    release();
    assert.equal(await ended, 0);
    assert.match(read(root)[1]!, /^udb2:\$6\$salt\$\w+\.\/z:/m);
    // The same holder takes it again, and gives it back.
    release = await lock.hold();
    release();
    execFileSync('/usr/sbin/chpasswd', ['-e', '-R', root], { input: `udb3:${HASH}y\n` });
  });

  it('writes no part of a file it cannot write whole (a file size limit), and leaves nothing beside it', () => {
    const root = systemRoot();
    const before = read(root);
    const script = [
      `import { userDatabase } from ${JSON.stringify(new URL('../../src/provision/linux/user/database.ts', import.meta.url).href)};`,
      `await userDatabase(${JSON.stringify(root)}).add({ user: 'udbbig', uid: 3400, gecos: 'Berth big.example', home: '/home/udbbig', shell: '/bin/sh', groups: [], hash: '!' })`,
      "  .then(() => console.log('written'), (error) => console.log('refused:', error.code));",
    ].join('\n');
    // A shell whose files may not pass 1 KB; the database's are larger.
    const said = execFileSync(
      '/bin/sh',
      ['-c', 'ulimit -f 1; exec "$0" --input-type=module -e "$1"', process.execPath, script],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(said.trim(), 'refused: EFBIG');
    assert.deepEqual(read(root), before);
    assert.deepEqual(
      readdirSync(join(root, 'etc')).filter((name) => /^(?:passwd|shadow|group|gshadow)[+.]/.test(name)),
      [],
    );
  });

  it('takes back new lines cut short inside a file (a file size limit), and writes none of the others', async () => {
    const root = systemRoot();
    const alone = tempDir('berth-user-db-');
    dirs.push(alone);
    cpSync(root, alone, { recursive: true, preserveTimestamps: true });
    // A limit (in the shell's blocks of 512 bytes) that every file is below and within 512 bytes
    // of, so that a burst of 29 users' lines stops inside the first file written (shadow).
    const blocks =
      Math.max(...FILES.map((file) => Math.floor(statSync(join(root, 'etc', file)).size / 512))) + 1;
    const users = Array.from({ length: 30 }, (_, i) => ({
      user: `udc${i}`,
      uid: 3500 + i,
      gecos: `Berth udc${i}.example`,
      home: `/home/udc${i}`,
      shell: '/bin/sh',
      groups: [],
      hash: `${HASH}${i}`,
    }));
    // The first user is written alone (the burst's first rewrite), the 29 after it together.
    const script = [
      `import { userDatabase } from ${JSON.stringify(new URL('../../src/provision/linux/user/database.ts', import.meta.url).href)};`,
      `const database = userDatabase(${JSON.stringify(root)});`,
      `const said = await Promise.allSettled(${JSON.stringify(users)}.map((user) => database.add(user)));`,
      "console.log([...new Set(said.map((one) => one.status === 'rejected' ? one.reason.code : 'written'))].join());",
    ].join('\n');
    const said = execFileSync(
      '/bin/sh',
      ['-c', `ulimit -f ${blocks}; exec "$0" --input-type=module -e "$1"`, process.execPath, script],
      { encoding: 'utf8' },
    );
    assert.equal(said.trim(), 'written,EFBIG');
    await userDatabase(alone).add(users[0]!);
    assert.deepEqual(read(root), read(alone));
  });

  it('waits for the lock the shadow tools hold, and for a live process holding a file lock; breaks a dead one', async () => {
    const root = systemRoot();
    const before = read(root);
    const database = userDatabase(root);
    const held = await holdLock(root);
    let settled = false;
    const edit = database.edit({ user: 'udb3', locked: true, shell: '/usr/sbin/nologin' }).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(settled, false);
    assert.deepEqual(read(root), before);
    await held.release();
    await edit;
    assert.match(read(root)[1]!, /^udb3:!\$6\$/m);

    // A file lock of a live process (as a shadow tool run with --prefix takes it) is waited for.
    const sleeper = spawn('/bin/sleep', ['30'], { stdio: 'ignore' });
    writeFileSync(join(root, 'etc/shadow.lock'), String(sleeper.pid));
    settled = false;
    const second = database.edit({ user: 'udb3', locked: false, shell: '/bin/sh' }).then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal(settled, false);
    rmSync(join(root, 'etc/shadow.lock'));
    await second;
    sleeper.kill();
    assert.match(read(root)[1]!, /^udb3:\$6\$/m);

    // One whose process has ended is stale, and broken.
    const ended = spawn('/bin/true');
    await new Promise((resolve) => ended.once('exit', resolve));
    writeFileSync(join(root, 'etc/passwd.lock'), String(ended.pid));
    await database.edit({ user: 'udb3', locked: true, shell: '/bin/false' });
    assert.match(read(root)[0]!, /^udb3:.*:\/bin\/false$/m);
    for (const file of FILES)
      assert.throws(() => statSync(join(root, 'etc', `${file}.lock`)), { code: 'ENOENT' });
  });
});
