// Accounts on one server, attacked by the account next door (CONTRACT §10, "Tenants are isolated
// from one another"), in `berth sandbox`: alice has PHP with every function enabled and an SSH
// shell; bob keeps his site's secrets in files of the usual mode 0644. alice tries to read them,
// to see bob's processes or IPC objects, to leave processes or IPC objects that outlive her
// suspension and removal, and to fork without bound. Each attack is made as a customer would make
// it: a PHP page over HTTPS, a shell.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  ipcObjectsOf,
  type RunningSandbox,
  sandboxCall,
  sandboxSsh,
  startSandbox,
} from '../process.ts';

const ALICE = 'Alice-pass-1234';
const BOB = 'Bob-pass-12345';

describe('accounts isolated from one another', () => {
  const dataDir = tempDir('berth-isolation-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const call = async (operation: string, params: Record<string, string>) => {
    const reply = await sandboxCall(sandbox, operation, params);
    assert.equal(reply.status, 200, `${operation}: ${reply.info}`);
  };
  const exec = async (args: string[]) => {
    const result = await running.exec(args);
    assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
    return result.stdout;
  };
  /** Writes a file as the account's own user (as an upload would), mode 0644. */
  const put = (user: string, path: string, content: string) =>
    running.exec([
      '/usr/sbin/runuser',
      '-u',
      user,
      '--',
      '/usr/bin/python3',
      '-c',
      'import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_CREAT|os.O_TRUNC, 0o644); os.write(fd, sys.argv[2].encode()); os.fchmod(fd, 0o644)',
      path,
      content,
    ]);
  /** A PHP page of the account's site, run over HTTPS as a visitor would ask for it. */
  const sitePage = async (user: string, name: string, php: string) => {
    const put1 = await put(user, `/home/${user}/public_html/${name}`, php);
    assert.equal(put1.code, 0, put1.stderr);
    const reply = curl([
      '--resolve',
      `${user}.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://${user}.example:${sandbox.https_port}/${name}`,
    ]);
    assert.equal(reply.status, 200, reply.body);
    return reply.body;
  };
  const alicePage = (name: string, php: string) => sitePage('alice', name, php);
  const uidOf = async (user: string) => Number((await exec(['/usr/bin/id', '-u', '--', user])).trim());
  /** The processes running as a user, seen by root in the sandbox. */
  const processesOf = async (user: string) =>
    (await running.exec(['/usr/bin/pgrep', '-u', user, '-a'])).stdout.trim();

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    for (const [user, password, shell] of [
      ['alice', ALICE, '1'],
      ['bob', BOB, '0'],
    ] as const)
      await call('createacct', {
        user,
        domain: `${user}.example`,
        email: `${user}@example.org`,
        package: 'default',
        password,
        shell,
      });
    const secret = await put(
      'bob',
      '/home/bob/public_html/wp-config.php',
      "<?php $password = 'bob-db-secret';\n",
    );
    assert.equal(secret.code, 0, secret.stderr);
  });
  after(async () => {
    if (running.child.exitCode === null) await running.stop();
  });

  it("gives alice's PHP no way into bob's PHP socket: it cannot connect, nor start his master", async () => {
    const bobMaster = async () =>
      (
        await running.exec([
          '/usr/bin/pgrep',
          '-f',
          '^php-fpm: master process \\(/etc/berth/php-fpm/bob\\.conf\\)',
        ])
      ).stdout.trim();
    assert.equal(await bobMaster(), '', 'no master of bob before: his site had no request');
    // Every PHP socket's path is in /proc/net/unix, which every process reads (named by a keyed
    // hash, not by the account): alice tries each, from a program her PHP runs (open_basedir binds
    // PHP's own functions, not what it runs).
    const connect =
      'import os, re, socket\n' +
      "for path in sorted(set(re.findall(r'/run/berth/php/berth-[0-9a-f]{24}\\.sock', open('/proc/net/unix').read()))):\n" +
      // Another sandbox on the machine lists its own, which are at no path here.
      '    if not os.path.exists(path): continue\n' +
      '    s = socket.socket(socket.AF_UNIX)\n' +
      '    try:\n' +
      "        s.connect(path); print(path, 'OPENED')\n" +
      '    except OSError as e:\n' +
      "        print(path, 'refused:', e.strerror)\n";
    const page = await alicePage(
      'sockets.php',
      `<?php echo shell_exec('/usr/bin/python3 -c ' . escapeshellarg(base64_decode('${Buffer.from(connect).toString('base64')}')) . ' 2>&1');`,
    );
    const tried = page.split('\n').filter((line) => line.startsWith('/run/berth/php/'));
    assert.ok(tried.length >= 2, `alice's and bob's sockets are listed: ${page}`);
    for (const line of tried) assert.match(line, / refused: Permission denied$/, page);
    assert.equal(await bobMaster(), '', 'no master of bob started by her attempts');
  });

  it("keeps bob's site files from alice's PHP, however readable the files are", async () => {
    const page = await alicePage(
      'read.php',
      `<?php
echo shell_exec('cat /home/bob/public_html/wp-config.php 2>&1; ls /home/bob/public_html 2>&1; ls /home/bob 2>&1');
echo file_get_contents('/home/bob/public_html/wp-config.php') === false ? "no-read\\n" : "read\\n";
`,
    );
    // Its PHP sees no other home at all; and any process of alice's, wherever it runs, is refused
    // by the modes alone.
    assert.doesNotMatch(page, /bob-db-secret/);
    assert.doesNotMatch(page, /^wp-config\.php$/m);
    assert.match(page, /No such file or directory/);
    assert.match(page, /no-read/);
    const direct = await running.asUser(
      'alice',
      'cat /home/bob/public_html/wp-config.php; ls /home/bob/public_html',
    );
    assert.doesNotMatch(direct.stdout, /bob-db-secret|wp-config/);
    assert.match(direct.stderr, /wp-config\.php: Permission denied/);
    assert.match(direct.stderr, /public_html': Permission denied/);
    // nginx still serves bob's own site from the directory no other account can enter.
    const modes = await exec(['/usr/bin/stat', '-c', '%a %U:%G', '/home/bob/public_html']);
    assert.equal(modes.trim(), '750 bob:www-data');
    // A link in alice's site to bob's file is not served: its owner does not own the target.
    await exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/usr/bin/ln',
      '-s',
      '/home/bob/public_html/wp-config.php',
      '/home/alice/public_html/steal.txt',
    ]);
    const linked = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/steal.txt`,
    ]);
    assert.doesNotMatch(linked.body, /bob-db-secret/);
    assert.notEqual(linked.status, 200);
  });

  it('shows PHP and the shell their own processes alone, in a /proc mounted to hide the others', async () => {
    const page = await alicePage(
      'ps.php',
      `<?php
echo shell_exec('ps -e -o user= | sort -u'), "--\\n";
echo shell_exec('ls /home'), "--\\n";
echo shell_exec('grep " /proc " /proc/self/mountinfo');
`,
    );
    const [users, names, mounts] = page.split('--\n');
    assert.deepEqual(users!.trim().split('\n'), ['alice']);
    // Its home alone below the home base.
    assert.equal(names, 'alice\n');
    assert.match(mounts!.trim().split('\n').at(-1)!, / - proc proc \S*hidepid=(invisible|2)/);
    const shell = sandboxSsh(sandbox, 'ssh', 'alice', ALICE, [
      'ps -e -o user= | sort -u; echo --; ls /home; echo --; grep " /proc " /proc/self/mountinfo; test -e /etc/shadow && echo shadow',
    ]);
    assert.equal(shell.code, 1, shell.stderr);
    const [shellUsers, homes, shellMounts] = shell.stdout.split('--\n');
    assert.equal(shellUsers, 'alice\n');
    assert.equal(homes, 'alice\n');
    // The one mounted last at /proc, which the shell sees, is a proc hiding other users' processes.
    assert.match(shellMounts!.trim().split('\n').at(-1)!, / - proc proc \S*hidepid=(invisible|2)/);
    assert.doesNotMatch(shell.stdout, /shadow/);
  });

  it("gives each account's PHP every directory all users may write, of its own, inside its home", async () => {
    const shared = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/var/lib/php/sessions'];
    const page = await alicePage(
      'tmp.php',
      `<?php
// From a shell, as an attack would: open_basedir (a convenience, no barrier) stops PHP's own functions.
foreach (${JSON.stringify(shared)} as $dir) shell_exec("echo x > $dir/alice-" . basename($dir));
echo shell_exec('ls /tmp');
`,
    );
    assert.deepEqual(
      page.trim().split('\n').sort(),
      ['alice-lock', 'alice-sessions', 'alice-shm', 'alice-tmp'],
      'one directory, alice’s own tmp, behind every name',
    );
    // The files are in alice's home (her quota), not in the system's shared directories.
    assert.match(await exec(['/usr/bin/ls', '/home/alice/tmp']), /alice-sessions/);
    for (const dir of shared) assert.doesNotMatch(await exec(['/usr/bin/ls', '-a', dir]), /alice-/);
  });

  it('lets no account list the directories whose entries name the tenants', async () => {
    const dirs = [
      '/var/www/berth-sites',
      '/etc/bind/zones',
      '/var/log/nginx',
      '/etc/berth/certs',
      '/etc/berth/dkim',
      // The DKIM keys made ahead, each a later account's: root's alone.
      '/etc/berth/dkim/.pool',
      '/run/berth/php',
    ];
    const page = await alicePage(
      'list.php',
      `<?php
foreach (${JSON.stringify(dirs)} as $dir) echo $dir, ' ', shell_exec("ls $dir 2>&1 | head -c 300"), "\n";
echo shell_exec('cat /etc/bind/named.conf.berth 2>&1');
`,
    );
    for (const dir of dirs) assert.match(page, new RegExp(`${dir} ls: cannot open directory`), page);
    assert.doesNotMatch(page, /bob/);
    assert.match(page, /named\.conf\.berth: Permission denied/);
    // Root still lists them: the server's own tools are unchanged.
    assert.match(await exec(['/usr/bin/ls', '/var/www/berth-sites']), /bob\.example/);
  });

  it("keeps PHP's error log in the account's home, under its quota, out of the web server's log", async () => {
    // As an attack would, from a shell: make the log unopenable, so that PHP falls back to the
    // web server's log in /var/log. The log and its directory are root's: nothing there is hers.
    const sabotage = await running.asUser(
      'alice',
      'cd /home/alice/logs; chmod 000 php-error.log; rm -f php-error.log; ln -s /dev/null php-error.log; mkdir php-error.log; true',
    );
    assert.equal(sabotage.code, 0, sabotage.stderr);
    const line = 'B'.repeat(8000);
    await alicePage('errors.php', `<?php for ($i = 0; $i < 50; $i++) error_log('${line}'); echo 'logged';`);
    const own = await exec(['/usr/bin/stat', '-c', '%s %U %G %a', '/home/alice/logs/php-error.log']);
    const [size, owner, group, mode] = own.trim().split(' ');
    assert.ok(Number(size) >= 50 * 8000, `alice's log holds it: ${own}`);
    assert.deepEqual([owner, group, mode], ['root', 'alice', '660']);
    const web = await exec(['/usr/bin/cat', '/var/log/nginx/error.log']);
    assert.doesNotMatch(web, /BBBBBBBB/, "nothing of it in the web server's log");
  });

  it("keeps each account's SysV IPC objects from every other account's PHP, and from the system", async () => {
    // Shared memory, a queue and semaphores anyone may use (0666), as a cache or a lock would be.
    const made = await alicePage(
      'ipc.php',
      `<?php
echo shell_exec('ipcmk -M 1048576 -p 0666; ipcmk -Q -p 0666; ipcmk -S 4 -p 0666; echo ==; ipcs');
`,
    );
    const [ids = '', listed = ''] = made.split('==\n');
    assert.equal(ids.match(/id: \d+/g)?.length, 3, made);
    // Its own PHP sees them (the three rows owned by alice, 0666).
    assert.equal(listed.match(/^0x[0-9a-f]+\s+\d+\s+alice\s+666\b/gm)?.length, 3, listed);
    // bob's PHP sees no object at all, and can neither remove nor attach one by its id.
    const shmid = /Shared memory id: (\d+)/.exec(ids)?.[1];
    const seen = await sitePage(
      'bob',
      'ipc.php',
      `<?php
echo shell_exec('ipcs; ipcrm -m ${shmid} 2>&1; ipcs -m -i ${shmid} 2>&1');
`,
    );
    assert.doesNotMatch(seen, /^0x[0-9a-f]+\s+\d+\s/m, seen);
    assert.match(seen, /invalid id|Invalid argument/, seen);
    // Nor does the system's namespace (a shell session or cron job of another account) hold them.
    assert.deepEqual(await ipcObjectsOf(running, await uidOf('alice')), []);
  });

  it('bounds the processes and the memory an account may use', async () => {
    await alicePage(
      'fork.php',
      `<?php
shell_exec('i=0; while [ $i -lt 400 ]; do sleep 30 > /dev/null 2>&1 < /dev/null & i=$((i+1)); done > /dev/null 2>&1');
echo 'forked';
`,
    );
    const sleeping = Number(
      (await running.exec(['/usr/bin/pgrep', '-c', '-u', 'alice', 'sleep'])).stdout.trim(),
    );
    // Where the kernel counts alice's processes: her group in the pids controller's hierarchy.
    const oldest = (await exec(['/usr/bin/pgrep', '-o', '-u', 'alice', 'sleep'])).trim();
    const groups = await exec(['/usr/bin/cat', `/proc/${oldest}/cgroup`]);
    const pids = /^\d+:pids:(\/\S+)$/m.exec(groups)?.[1];
    const unified = /^0::(\/\S+)$/m.exec(groups)?.[1];
    const dir = pids ? `/sys/fs/cgroup/pids${pids}` : `/sys/fs/cgroup${unified}`;
    assert.equal((await exec(['/usr/bin/cat', `${dir}/pids.max`])).trim(), '256');
    // Its memory is bounded too (account_memory, 2048 MB), where the memory controller is.
    const memory = /^\d+:memory:(\/\S+)$/m.exec(groups)?.[1];
    const limit = memory
      ? `/sys/fs/cgroup/memory${memory}/memory.limit_in_bytes`
      : `/sys/fs/cgroup${unified}/memory.max`;
    assert.equal((await exec(['/usr/bin/cat', limit])).trim(), String(2048 * 1024 * 1024));
    const current = Number((await exec(['/usr/bin/cat', `${dir}/pids.current`])).trim());
    assert.ok(
      sleeping > 100 && sleeping < 256 && current <= 256,
      `alice runs ${sleeping} sleeps, ${current} in all`,
    );
    await exec(['/usr/bin/pkill', '-u', 'alice', 'sleep']);
  });

  it('ends every process of a suspended account, detached ones and open SSH sessions included, and removes its IPC objects', async () => {
    // A process that forks twice and leaves its session, started from PHP, and one from the shell.
    await alicePage(
      'stay.php',
      `<?php
shell_exec('setsid sh -c "(sleep 600 &) ; exec sleep 601" > /dev/null 2>&1 < /dev/null &');
echo 'ok';
`,
    );
    const detached = sandboxSsh(sandbox, 'ssh', 'alice', ALICE, [
      '(sleep 602 >/dev/null 2>&1 </dev/null &); echo started',
    ]);
    assert.equal(detached.code, 0, detached.stderr);
    // An SSH session left open, as a customer's terminal would be.
    const askpass = join(dataDir, 'askpass.sh');
    writeFileSync(askpass, `#!/bin/sh\necho '${ALICE}'\n`, { mode: 0o700 });
    const open = spawn(
      '/usr/bin/ssh',
      [
        '-p',
        String(sandbox.ssh_port),
        '-o',
        'StrictHostKeyChecking=no',
        '-o',
        'UserKnownHostsFile=/dev/null',
        '-o',
        'PreferredAuthentications=password',
        'alice@127.0.0.1',
        'sleep 603',
      ],
      {
        stdio: 'ignore',
        env: {
          ...process.env,
          SSH_ASKPASS: askpass,
          SSH_ASKPASS_REQUIRE: 'force',
        },
      },
    );
    open.on('error', () => {});
    const ended = new Promise((resolve) => open.once('exit', resolve));
    for (let i = 0; i < 100 && !/sleep 603/.test(await processesOf('alice')); i++) await sleep(100);
    const before = await processesOf('alice');
    for (const seconds of ['600', '601', '602']) assert.match(before, new RegExp(`sleep ${seconds}`), before);
    // SysV IPC objects made as the account outside PHP's IPC namespace (by root's runuser: its shell
    // sessions cannot make one, its cron jobs have a namespace of their own) outlive every process.
    await exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/bin/sh',
      '-c',
      'ipcmk -M 1048576 -p 0666 && ipcmk -Q -p 0666 && ipcmk -S 4 -p 0666',
    ]);
    const alice = await uidOf('alice');
    assert.equal((await ipcObjectsOf(running, alice)).length, 3);
    await call('suspendacct', { user: 'alice', reason: 'isolation test' });
    assert.equal(await processesOf('alice'), '');
    assert.deepEqual(await ipcObjectsOf(running, alice), [], 'her IPC objects went with her processes');
    // The open session has ended: the customer's ssh sees its connection closed.
    await ended;
    // Nothing of alice's runs, and no login starts again until she is unsuspended.
    const refused = sandboxSsh(sandbox, 'ssh', 'alice', ALICE, ['echo in']);
    assert.notEqual(refused.code, 0);
    await call('unsuspendacct', { user: 'alice' });
    assert.match(await alicePage('back.php', '<?php echo "back";'), /back/);
  });

  it('ends every process of a removed account, and leaves no control group behind', async () => {
    await call('createacct', {
      user: 'carol',
      domain: 'carol.example',
      email: 'carol@example.org',
      package: 'default',
      password: 'Carol-pass-1234',
      shell: '1',
    });
    const left = sandboxSsh(sandbox, 'ssh', 'carol', 'Carol-pass-1234', [
      '(sleep 604 >/dev/null 2>&1 </dev/null &); cat /proc/self/cgroup',
    ]);
    assert.equal(left.code, 0, left.stderr);
    const group = /\/(berth-sandbox-[0-9a-f]+)\/carol$/m.exec(left.stdout)?.[1];
    assert.ok(group, `carol's session is in her control group: ${left.stdout}`);
    assert.match(await processesOf('carol'), /sleep 604/);
    await call('removeacct', { user: 'carol' });
    assert.equal(await processesOf('carol'), '');
    const groups = await exec(['/usr/bin/find', '/sys/fs/cgroup', '-maxdepth', '3', '-path', `*/${group}/*`]);
    assert.doesNotMatch(groups, /carol/);
  });
});
