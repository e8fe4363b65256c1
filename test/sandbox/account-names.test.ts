// No account lists the others (CONTRACT §10, "Tenants are isolated"): in `berth sandbox`, alice
// asks the system for the server's users as a customer would, from a PHP page over HTTPS
// (posix_getpwnam, /etc/passwd, `getent` from shell_exec), from her SSH shell and from cron jobs,
// her own and those of carol, who has no shell. None of them names bob, nor an account made after
// alice's PHP started (useradd replaces /etc/passwd then); alice's own entry is there, and PHP's
// mail() still goes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  arrivedMessage,
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxSsh,
  sandboxWithAccounts,
} from '../process.ts';

const password = (user: string) => `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`;
/** What the account's programs learn of the server's users, one `key=value` a line. */
const SHELL_PROBE = [
  'echo "passwd=$(cut -d: -f1 /etc/passwd | tr "\\n" " ")";',
  'echo "group=$(cut -d: -f1,4 /etc/group | tr "\\n" " ")";',
  'echo "getent=$(getent passwd | cut -d: -f1 | tr "\\n" " ")";',
  'echo "lookup=$(getent passwd bob >/dev/null && echo found || echo none)";',
  'echo "id=$(id -un)";',
  'echo end',
].join(' ');

describe('no account lists the others', () => {
  const dataDir = tempDir('berth-account-names-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const make = async (user: string, shell: string) => {
    const made = await sandboxCall(sandbox, 'createacct', {
      user,
      domain: `${user}.example`,
      email: `${user}@example.org`,
      package: 'default',
      password: password(user),
      shell,
    });
    assert.equal(made.status, 200, made.info);
  };
  /** A PHP page of alice's site, written as her upload would be, asked for over HTTPS. */
  const alicePage = async (name: string, php: string) => {
    const put = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/usr/bin/python3',
      '-c',
      'import sys; open(sys.argv[1], "w").write(sys.argv[2])',
      `/home/alice/public_html/${name}`,
      php,
    ]);
    assert.equal(put.code, 0, put.stderr);
    const reply = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/${name}`,
    ]);
    assert.equal(reply.status, 200, reply.body);
    return reply.body;
  };
  /**
   * What alice's PHP learns of the server's users: by NSS, and by reading the files (with cat:
   * open_basedir, a convenience and no barrier, keeps PHP's own file functions out of /etc).
   */
  const PAGE = `<?php
$bob = posix_getpwnam('bob');
echo "getpwnam=", $bob === false ? 'none' : $bob['dir'], "\\n";
$me = posix_getpwuid(posix_geteuid());
echo "own=", $me['name'], " ", $me['dir'], "\\n";
$read = fn ($path) => (string) shell_exec('cat ' . escapeshellarg($path) . ' 2>/dev/null');
echo "file=", preg_match('/^root:/m', $read('/etc/passwd')) ? 'read' : 'unread', "\\n";
echo "groups=", preg_match('/^postdrop:/m', $read('/etc/group')) ? 'read' : 'unread', "\\n";
foreach (['/etc/shadow', '/etc/berth/php-etc/bob/passwd', '/run/berth/php/etc/system/passwd', '/etc/passwd-', '/etc/subuid'] as $i => $path)
  echo "behind=", $i, " ", $read($path) === '' ? 'none' : 'read', "\\n";
// Every listening socket's path, which every process reads: the PHP sockets name no account.
$unix = $read('/proc/net/unix');
echo "unix=", preg_match('/berth-[0-9a-f]{24}\\.sock/', $unix) ? 'listed' : 'unlisted', "\\n", $unix;
echo shell_exec('${SHELL_PROBE.replaceAll("'", "\\'")}');
`;

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
    await make('carol', '0');
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it('alice’s PHP sees her own entry and the system’s users, never bob, and mail() still goes', async () => {
    const page = await alicePage('names.php', PAGE);
    assert.match(page, /^getpwnam=none$/m, page);
    assert.match(page, /^own=alice \/home\/alice$/m, page);
    assert.match(page, /^file=read$/m, page);
    assert.match(page, /^groups=read$/m, page);
    assert.equal(page.match(/^behind=\d+ none$/gm)?.length, 5, page);
    assert.match(page, /^passwd=root .*\balice\b/m, page);
    assert.match(page, /^lookup=none$/m, page);
    assert.match(page, /^id=alice$/m, page);
    assert.match(page, /^unix=listed$/m, page);
    assert.doesNotMatch(page, /\b(bob|carol)\b/, page);
    const sent = await alicePage(
      'mail.php',
      `<?php echo mail('bob@bob.example', 'names', 'Hello bob.', 'From: alice@alice.example') ? 'sent' : 'refused';`,
    );
    assert.equal(sent, 'sent');
    assert.match(await arrivedMessage(sandbox, `bob:${password('bob')}`, 1), /Subject: names/);
  });

  it('an account made while alice’s PHP runs is not seen by it either; what else of /etc changes is', async () => {
    // useradd writes a new /etc/passwd and renames it over the old: a file bound over the old one
    // would be dropped by the kernel here.
    await make('dave', '0');
    const changed = await running.exec([
      '/bin/sh',
      '-ec',
      'cp /etc/hosts /etc/hosts.new; echo "192.0.2.7 changed.example" >> /etc/hosts.new; mv /etc/hosts.new /etc/hosts; mkdir /etc/berth-test; echo new > /etc/berth-test/file',
    ]);
    assert.equal(changed.code, 0, changed.stderr);
    await sleep(4_000);
    const seen = await alicePage(
      'etc.php',
      `<?php echo gethostbyname('changed.example'), ' ', shell_exec('cat /etc/berth-test/file');`,
    );
    assert.equal(seen, '192.0.2.7 new\n');
    const page = await alicePage('names2.php', PAGE);
    assert.match(page, /^getpwnam=none$/m, page);
    assert.match(page, /^file=read$/m, page);
    assert.match(page, /^own=alice /m, page);
    assert.doesNotMatch(page, /\b(bob|carol|dave)\b/, page);
  });

  it('alice’s SSH shell and the cron jobs of alice and carol see no other account', async () => {
    const ssh = sandboxSsh(sandbox, 'ssh', 'alice', password('alice'), [SHELL_PROBE]);
    assert.match(ssh.stdout, /^end$/m, ssh.stderr);
    assert.match(ssh.stdout, /^id=alice$/m, ssh.stdout);
    assert.match(ssh.stdout, /^lookup=none$/m, ssh.stdout);
    assert.doesNotMatch(ssh.stdout, /\b(bob|carol|dave)\b/, ssh.stdout);
    for (const user of ['alice', 'carol']) {
      const added = await sandboxHolderCall(sandbox, { user, password: password(user) }, 'add_cron_job', {
        schedule: '* * * * *',
        command: `{ ${SHELL_PROBE}; } > /public_html/names.txt`,
      });
      assert.equal(added.status, 200, added.body.info);
    }
    for (const user of ['alice', 'carol']) {
      let text = '';
      for (let i = 0; i < 80 && !text.includes('end\n'); i++) {
        text = (await running.exec(['/usr/bin/cat', `/home/${user}/public_html/names.txt`])).stdout;
        if (!text.includes('end\n')) await sleep(1_000);
      }
      assert.match(text, new RegExp(`^id=${user}$`, 'm'), text);
      assert.match(text, /^lookup=none$/m, text);
      const others = ['alice', 'bob', 'carol', 'dave'].filter((name) => name !== user);
      assert.doesNotMatch(text, new RegExp(`\\b(${others.join('|')})\\b`), text);
    }
  });
});
