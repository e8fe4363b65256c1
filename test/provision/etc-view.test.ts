// The /etc an account's PHP sees (php/etc-view.ts): the system's users and the account's own line
// in passwd and group, no other account, no password hashes, no cron.d; every other file the
// system's (a hard link), kept up to date as the system's /etc changes.
import assert from 'node:assert/strict';
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import {
  accountViews,
  bindCommand,
  etcSignature,
  refreshView,
  viewGroup,
  viewPasswd,
} from '../../src/provision/linux/php/etc-view.ts';
import { inMountNamespace, tempDir } from '../helpers.ts';

const PASSWD = [
  'root:x:0:0:root:/root:/bin/bash',
  'postfix:x:104:107::/var/spool/postfix:/usr/sbin/nologin',
  'berth-lists:x:997:997::/nonexistent:/usr/sbin/nologin',
  'debian:x:1000:1000:Admin:/home/debian:/bin/bash',
  'alice:x:1001:1001:alice.example:/home/alice:/etc/berth/confine',
  'bob:x:1002:1002:bob.example:/home/bob:/etc/berth/confine',
  'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
  '',
].join('\n');
const GROUP = [
  'root:x:0:',
  'postdrop:x:108:',
  'berth-shell:x:996:alice,bob',
  'berth-sftp:x:995:bob,postfix',
  'alice:x:1001:',
  'bob:x:1002:',
  'nogroup:x:65534:',
  '',
].join('\n');

describe('the /etc of an account’s PHP', () => {
  it('has the system’s users and the account’s own line, and no other account', () => {
    const passwd = viewPasswd(PASSWD, 'alice');
    assert.deepEqual(
      passwd
        .trim()
        .split('\n')
        .map((line) => line.split(':')[0]),
      ['root', 'postfix', 'berth-lists', 'alice', 'nobody'],
    );
    assert.match(passwd, /^alice:x:1001:1001:alice\.example:\/home\/alice:\/etc\/berth\/confine$/m);
    const group = viewGroup(GROUP, 'alice', passwd);
    assert.equal(
      group,
      'root:x:0:\npostdrop:x:108:\nberth-shell:x:996:alice\nberth-sftp:x:995:postfix\nalice:x:1001:\nnogroup:x:65534:\n',
    );
    assert.doesNotMatch(`${passwd}${group}`, /bob|debian/);
  });

  it('gives every account the same passwd and group when the system’s files are read once for all', () => {
    const views = accountViews(PASSWD, GROUP);
    for (const user of ['alice', 'bob', 'debian', 'root', 'postfix', 'nobody', 'nosuch']) {
      const passwd = viewPasswd(PASSWD, user);
      assert.deepEqual(views(user), { passwd, group: viewGroup(GROUP, user, passwd) }, user);
    }
    // Any files of users and groups, system's and accounts', members anywhere.
    const name = fc.constantFrom('root', 'postfix', 'alice', 'bob', 'carol', 'nobody', 'www-data');
    const id = fc.constantFrom('0', '104', '999', '1000', '1001', '1002', '65534');
    fc.assert(
      fc.property(
        fc.array(fc.tuple(name, id), { maxLength: 8 }),
        fc.array(fc.tuple(name, id, fc.array(name, { maxLength: 4 })), { maxLength: 8 }),
        name,
        (users, groups, user) => {
          const passwd = `${users.map(([n, uid]) => `${n}:x:${uid}:${uid}::/home/${n}:/bin/sh`).join('\n')}\n`;
          const group = `${groups.map(([n, gid, members]) => `${n}:x:${gid}:${members.join(',')}`).join('\n')}\n`;
          const viewed = viewPasswd(passwd, user);
          assert.deepEqual(accountViews(passwd, group)(user), {
            passwd: viewed,
            group: viewGroup(group, user, viewed),
          });
        },
      ),
    );
  });

  it('is the system’s /etc with passwd and group the account’s, and follows the system’s changes', async () => {
    const root = tempDir('berth-etc-view-');
    const etc = join(root, 'etc');
    const view = join(root, 'view');
    mkdirSync(join(etc, 'ssl'), { recursive: true });
    mkdirSync(join(etc, 'cron.d'));
    mkdirSync(view);
    writeFileSync(join(etc, 'passwd'), PASSWD);
    writeFileSync(join(etc, 'passwd-'), PASSWD);
    writeFileSync(join(etc, 'group'), GROUP);
    writeFileSync(join(etc, 'shadow'), 'alice:$6$hash:1::::::\n', { mode: 0o640 });
    writeFileSync(join(etc, 'subuid'), 'alice:100000:65536\nbob:165536:65536\n');
    writeFileSync(join(etc, 'hosts'), '127.0.0.1 localhost\n');
    // What useradd and vipw write beside the files for a moment: whole copies of them.
    for (const name of ['passwd+', 'group+', 'passwd.lock', 'ptmp', 'nshadow', '.pwd.lock'])
      writeFileSync(join(etc, name), PASSWD);
    writeFileSync(join(etc, 'passwords.conf'), 'kept\n');
    symlinkSync('/usr/share/zoneinfo/Etc/UTC', join(etc, 'localtime'));

    const first = refreshView(etc, view, 'alice');
    assert.deepEqual(first.bound.sort(), ['ssl']);
    assert.deepEqual(first.made.sort(), ['ssl']);
    assert.deepEqual(readdirSync(view).sort(), [
      'cron.d',
      'group',
      'hosts',
      'localtime',
      'passwd',
      'passwords.conf',
      'ssl',
    ]);
    assert.doesNotMatch(readFileSync(join(view, 'passwd'), 'utf8'), /bob/);
    // A copy, not a hard link: Debian's cron ignores an /etc/crontab with more than one link.
    assert.equal(readFileSync(join(view, 'hosts'), 'utf8'), '127.0.0.1 localhost\n');
    assert.equal(lstatSync(join(etc, 'hosts')).nlink, 1);
    assert.equal(lstatSync(join(view, 'localtime')).isSymbolicLink(), true);

    // The system replaces files (useradd renames a new passwd over it), adds and removes some.
    writeFileSync(join(etc, 'passwd.new'), `${PASSWD}carol:x:1003:1003::/home/alice-new:/bin/sh\n`);
    renameSync(join(etc, 'passwd.new'), join(etc, 'passwd'));
    writeFileSync(join(etc, 'hosts.new'), '127.0.0.1 localhost server\n');
    renameSync(join(etc, 'hosts.new'), join(etc, 'hosts'));
    mkdirSync(join(etc, 'php'));
    writeFileSync(join(etc, 'mailname'), 'server.example\n');
    writeFileSync(join(etc, 'hosts.allow'), 'ALL: LOCAL\n');
    const second = refreshView(etc, view, 'alice');
    const signature = etcSignature(etc);
    assert.deepEqual(second.made, ['php']);
    assert.equal(readFileSync(join(view, 'hosts'), 'utf8'), '127.0.0.1 localhost server\n');
    assert.doesNotMatch(readFileSync(join(view, 'passwd'), 'utf8'), /carol/);
    assert.deepEqual(refreshView(etc, view, 'alice').made, []);
    // A file changed in place is seen too: /etc's signature changes, and the copy follows.
    assert.equal(etcSignature(etc), signature);
    await sleep(20);
    writeFileSync(join(etc, 'hosts.allow'), 'ALL: 192.0.2.0/24\n', { flag: 'r+' });
    assert.notEqual(etcSignature(etc), signature);
    refreshView(etc, view, 'alice');
    assert.equal(readFileSync(join(view, 'hosts.allow'), 'utf8'), 'ALL: 192.0.2.0/24\n');
    assert.deepEqual(readdirSync(view).sort(), [
      'cron.d',
      'group',
      'hosts',
      'hosts.allow',
      'localtime',
      'mailname',
      'passwd',
      'passwords.conf',
      'php',
      'ssl',
    ]);
  });

  it('binds directories with a fixed script, the names as its arguments', () => {
    const argv = bindCommand('/etc', '/etc/berth/php-etc/alice', ['ssl', '$(id)']);
    assert.equal(argv[0], '/usr/bin/perl');
    assert.deepEqual(argv.slice(4), [
      ...['may', '/etc/ssl', '/etc/berth/php-etc/alice/ssl', '', '4096', ''],
      ...['may', '/etc/$(id)', '/etc/berth/php-etc/alice/$(id)', '', '4096', ''],
    ]);
    assert.doesNotMatch(argv[2]!, /ssl|alice/);
    // Run in a mount namespace of its own: each name is bound, none is run, a missing one is passed.
    const root = tempDir('berth-etc-bind-');
    for (const dir of ['etc/ssl', 'etc/$(id)', 'view/ssl', 'view/$(id)', 'view/gone'])
      mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, 'etc/ssl/marker'), 'bound');
    const probe = inMountNamespace(
      bindCommand(join(root, 'etc'), join(root, 'view'), ['ssl', '$(id)', 'gone']),
      `cat "${root}/view/ssl/marker"`,
    ).stdout;
    assert.equal(probe, 'bound');
  });
});
