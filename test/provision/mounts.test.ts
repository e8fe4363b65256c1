// The one process that makes the mounts of an account's PHP view (src/provision/linux/php/mounts.ts),
// run in a mount namespace of its own: each kind of step, in order, and a step that must hold
// ending the script when it fails.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { type MountStep, MS, mountCommand } from '../../src/provision/linux/php/mounts.ts';
import { inMountNamespace, tempDir } from '../helpers.ts';

/** Runs the steps in a private mount namespace, then `probe` (sh) there; its output. */
const inNamespace = (steps: readonly MountStep[], probe: string) =>
  inMountNamespace(mountCommand(steps), probe);

describe('the mounts of a PHP view, made by one process', () => {
  it('binds, mounts, makes directories and moves in order, and passes an optional bind that fails', () => {
    const root = tempDir('berth-mounts-');
    for (const dir of ['home/alice', 'aside', 'base', 'gone-target'])
      mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, 'home/alice/marker'), 'alice');
    const { stdout, stderr } = inNamespace(
      [
        { bind: join(root, 'missing'), at: join(root, 'gone-target'), optional: true },
        {
          mount: 'berth-test',
          type: 'tmpfs',
          at: join(root, 'aside'),
          flags: MS.NOSUID | MS.NODEV,
          data: 'mode=0755,size=64k',
        },
        { mkdir: join(root, 'aside/alice'), mode: 0o751 },
        { mkdir: join(root, 'aside/other'), mode: 0o751 },
        { bind: join(root, 'home/alice'), at: join(root, 'aside/alice') },
        { move: join(root, 'aside'), at: join(root, 'base') },
      ],
      `cat "${root}/base/alice/marker"; stat -c %a "${root}/base/other" "${root}/base"; grep -c " ${root}/base " /proc/self/mountinfo`,
    );
    // The home's file through the moved tmpfs, the directory's exact mode, one mount at the base.
    assert.equal(stdout, 'alice751\n755\n1\n', stderr);
    assert.match(stderr, /berth-mount: .*gone-target: No such file or directory/);
  });

  it('stops at the first step that must hold and fails, naming it', () => {
    const root = tempDir('berth-mounts-');
    mkdirSync(join(root, 'a'));
    mkdirSync(join(root, 'b'));
    const { stdout, stderr } = inNamespace(
      [
        { bind: join(root, 'missing'), at: join(root, 'a') },
        { mount: 'berth-test', type: 'tmpfs', at: join(root, 'b'), flags: 0, data: '' },
      ],
      `grep -c "${root}/b " /proc/self/mountinfo || true`,
    );
    assert.match(stdout, /^failed \d+\n0\n$/);
    assert.match(stderr, new RegExp(`berth-mount: ${root}/a: No such file or directory`));
  });

  it('takes every path as an argument of a fixed script: none is run', () => {
    const argv = mountCommand([
      { bind: '/etc/$(id)', at: '/x/`id`' },
      { mkdir: '/x/;id', mode: 0o700 },
    ]);
    assert.equal(argv[0], '/usr/bin/perl');
    assert.doesNotMatch(argv[2]!, /id|\/x/);
    assert.deepEqual(argv.slice(4), [
      ...['must', '/etc/$(id)', '/x/`id`', '', String(MS.BIND), ''],
      ...['mkdir', '', '/x/;id', '', '0', '700'],
    ]);
  });
});
