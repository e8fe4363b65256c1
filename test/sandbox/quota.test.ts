// A customer past its disk quota, in `berth sandbox` (homes on btrfs, a qgroup per home): its PHP
// page over HTTPS and its SSH shell write as much as they can, and the filesystem stops them at the
// quota; editquota moves the limit, unlimited lifts it, the account next door is unaffected, and an
// account at its quota can still be unsuspended.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { curl, type RunningSandbox, sandboxCall, sandboxSsh, startSandbox } from '../process.ts';

const MiB = 1024 * 1024;

/** Writes `mb` MiB to public_html/<name>, a MiB at a time, until the filesystem refuses. */
const FILL_PHP = `<?php
$path = __DIR__ . '/' . basename($_GET['name']);
$chunk = str_repeat('x', 1048576);
$f = fopen($path, 'w');
$refused = false;
for ($i = 0; $i < (int) $_GET['mb']; $i++) {
  $n = @fwrite($f, $chunk);
  if ($n !== strlen($chunk)) { $refused = true; break; }
}
if (!@fclose($f)) $refused = true;
clearstatcache();
echo json_encode(['refused' => $refused, 'size' => filesize($path)]);
`;

describe('disk quotas in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-quota-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const call = async (operation: string, params: Record<string, string>) => {
    const reply = await sandboxCall(sandbox, operation, params);
    assert.equal(reply.status, 200, `${operation}: ${reply.info}`);
  };
  /** The PHP page of `user`'s site writing `mb` MiB to `name`. */
  const fillFromPhp = (user: string, name: string, mb: number) => {
    const reply = curl([
      '-k',
      '--resolve',
      `${user}.example:${sandbox.https_port}:127.0.0.1`,
      `https://${user}.example:${sandbox.https_port}/fill.php?name=${name}&mb=${mb}`,
    ]);
    assert.equal(reply.status, 200, reply.body);
    return JSON.parse(reply.body) as { refused: boolean; size: number };
  };
  /** `dd` in `user`'s SSH session (its jail) writing `mb` MiB to its shell's home. */
  const fillFromShell = (user: string, name: string, mb: number) => {
    const session = sandboxSsh(
      sandbox,
      'ssh',
      user,
      `Pass-${user}-1234`,
      [`dd if=/dev/zero of=${name} bs=1M count=${mb}; echo "dd-exit=$?"; wc -c <${name}`],
      '',
      60_000,
    );
    const exit = /dd-exit=(\d+)/.exec(session.stdout)?.[1];
    assert.ok(exit !== undefined, `no SSH session: ${session.stderr}`);
    const size = Number(session.stdout.trim().split('\n').at(-1));
    return { refused: exit !== '0', size, said: session.stdout + session.stderr };
  };

  /** An account of the 10 MB package, with the page that fills it. */
  const createTiny = async (user: string) => {
    await call('createacct', {
      user,
      domain: `${user}.example`,
      email: `${user}@example.org`,
      package: 'tiny',
      password: `Pass-${user}-1234`,
    });
    const page = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      user,
      '--',
      '/usr/bin/php',
      '-r',
      'file_put_contents($argv[1], base64_decode($argv[2]));',
      `/home/${user}/public_html/fill.php`,
      Buffer.from(FILL_PHP).toString('base64'),
    ]);
    assert.equal(page.code, 0, page.stderr);
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    await call('addpkg', { name: 'tiny', quota: '10', shell: 'on' });
    for (const user of ['tara', 'uwe']) await createTiny(user);
  });
  after(async () => {
    if (running?.child.exitCode === null) await running.stop();
  });

  it('stops a PHP page writing past a 10 MB quota at the quota', async () => {
    const written = fillFromPhp('tara', 'big.bin', 15);
    assert.equal(written.refused, true, 'the write past the quota was refused');
    assert.ok(written.size <= 10 * MiB, `${written.size} bytes written with a quota of 10 MB`);
    assert.ok(written.size >= 7 * MiB, `only ${written.size} bytes written before the refusal`);
  });

  it('stops dd in an SSH session at the quota, with the jail in the same home', async () => {
    const removed = await running.exec(['/usr/bin/rm', '-f', '--', '/home/tara/public_html/big.bin']);
    assert.equal(removed.code, 0, removed.stderr);
    await running.exec(['/usr/bin/btrfs', 'filesystem', 'sync', '/home']);
    const written = fillFromShell('tara', 'dd.bin', 15);
    assert.equal(written.refused, true, `dd past the quota was refused: ${written.said}`);
    assert.ok(written.size <= 10 * MiB, `${written.size} bytes written with a quota of 10 MB`);
    assert.ok(written.size >= 7 * MiB, `only ${written.size} bytes written: the jail took the quota`);
  });

  it('leaves the account next door its own quota, whatever tara did', async () => {
    const written = fillFromPhp('uwe', 'own.bin', 5);
    assert.deepEqual(written, { refused: false, size: 5 * MiB });
  });

  it('lets the account write more after editquota 20, and without a limit after unlimited', async () => {
    await call('editquota', { user: 'tara', quota: '20' });
    const more = fillFromPhp('tara', 'more.bin', 8);
    assert.deepEqual(more, { refused: false, size: 8 * MiB }, 'room up to 20 MB');
    const past = fillFromPhp('tara', 'past.bin', 10);
    assert.equal(past.refused, true, 'refused again at 20 MB');
    await call('editquota', { user: 'tara', quota: 'unlimited' });
    const free = fillFromPhp('tara', 'free.bin', 30);
    assert.deepEqual(free, { refused: false, size: 30 * MiB }, 'no limit');
    const still = fillFromPhp('uwe', 'second.bin', 8);
    assert.equal(still.refused, true, 'uwe is still held at 10 MB');
  });

  it('counts a btrfs subvolume made as the account inside its home in its quota', async () => {
    await call('createacct', {
      user: 'vera',
      domain: 'vera.example',
      email: 'vera@example.org',
      package: 'tiny',
      password: 'Pass-vera-1234',
    });
    const asVera = (script: string) => running.asUser('vera', script);
    // The kernel lets any user make a subvolume where it may write: its own qgroup, outside the
    // home's. The account's PHP, shell and cron jobs cannot (confine.test.ts); root's runuser as the
    // account can, and the sweep, the second line, puts it in the account's qgroup.
    const made = await asVera('/usr/bin/btrfs subvolume create /home/vera/public_html/sv');
    assert.equal(made.code, 0, made.stderr);
    const id = (
      await running.exec(['/usr/bin/btrfs', 'inspect-internal', 'rootid', '/home/vera/public_html/sv'])
    ).stdout.trim();
    const group = `1/${(await running.exec(['/usr/bin/stat', '-c', '%g', '/home/vera'])).stdout.trim()}`;
    // Berth puts it in vera's qgroup within seconds, while it serves.
    let parent = '';
    for (let i = 0; i < 60 && parent !== group; i++) {
      const shown = await running.exec(['/usr/bin/btrfs', 'qgroup', 'show', '-pre', '--raw', '/home/vera']);
      parent =
        shown.stdout
          .split('\n')
          .find((line) => line.trim().startsWith(`0/${id} `))
          ?.trim()
          .split(/\s+/)[5] ?? '';
      if (parent !== group) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.equal(parent, group, 'the subvolume is in the account’s qgroup');
    const filled = await asVera(
      'dd if=/dev/zero of=/home/vera/public_html/sv/fill bs=1M count=30 2>&1; echo "dd-exit=$?"; wc -c </home/vera/public_html/sv/fill',
    );
    assert.match(filled.stdout, /dd-exit=[1-9]/, `dd past the quota was refused: ${filled.stdout}`);
    const size = Number(filled.stdout.trim().split('\n').at(-1));
    assert.ok(size <= 10 * MiB, `${size} bytes written into the subvolume with a quota of 10 MB`);
  });

  it('unsuspends an account at its quota: its PHP starts again with the home full', async () => {
    await createTiny('wynn');
    const full = fillFromPhp('wynn', 'full.bin', 15);
    assert.equal(full.refused, true, 'the home is full');
    // Nothing more fits, its tmp (PHP's /tmp) included.
    const more = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'wynn',
      '--',
      '/usr/bin/touch',
      '/home/wynn/tmp/more',
    ]);
    assert.notEqual(more.code, 0, 'a file could still be made');
    await call('suspendacct', { user: 'wynn', reason: 'quota test' });
    await call('unsuspendacct', { user: 'wynn' });
    const removed = await running.exec(['/usr/bin/rm', '-f', '--', '/home/wynn/public_html/full.bin']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(fillFromPhp('wynn', 'again.bin', 1), { refused: false, size: MiB }, 'its PHP answers');
  });
});
