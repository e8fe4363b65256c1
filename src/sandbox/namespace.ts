// The sandbox's view of this machine, set up first inside its mount namespace (sandbox.ts makes
// it): throwaway overlays over every directory the hosting stack writes, the homes' own btrfs
// filesystem on /home (homes.ts), a /dev/shm of its own, and a /proc that shows each user only its
// own processes. All of it goes with the namespace.
import { chmodSync, chownSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { attachHomes, mountHomes } from './homes.ts';
import { run } from './system.ts';

/**
 * Every directory the hosting stack (and its users) write: each is seen through an overlay; /home
 * then holds the sandbox's own btrfs filesystem (homes.ts).
 */
const OVERLAID = ['/etc', '/home', '/var', '/run', '/root', '/srv', '/tmp', '/opt'];

/** Sets up the namespace of the sandbox whose directory is `dir` (its layers, its homes' image). */
export function setUpNamespace(dir: string): void {
  const homes = attachHomes(dir);
  mountOverlays(join(dir, 'layers'));
  mountHomes(homes);
  // No account sees another's processes: this namespace's /proc shows each user only its own.
  run(['/usr/bin/mount', '-o', 'remount,hidepid=invisible', '/proc']);
}

function mountOverlays(layers: string): void {
  run(['/usr/bin/mount', '-t', 'tmpfs', '-o', 'mode=0700', 'berth-sandbox', layers]);
  // The overlay over the directory that holds the layers goes last: after it, the layers' path
  // would lead into the overlay instead.
  const holds = (dir: string) => layers.startsWith(`${dir}/`);
  const order = OVERLAID.filter((d) => existsSync(d)).sort((a, b) => Number(holds(a)) - Number(holds(b)));
  for (const dir of order) {
    const name = dir.slice(1);
    const upper = join(layers, name, 'upper');
    const work = join(layers, name, 'work');
    mkdirSync(upper, { recursive: true });
    mkdirSync(work, { recursive: true });
    // The overlay's top directory takes the upper layer's owner and mode: /tmp stays 1777.
    const lower = statSync(dir);
    chownSync(upper, lower.uid, lower.gid);
    chmodSync(upper, lower.mode & 0o7777);
    run([
      '/usr/bin/mount',
      '-t',
      'overlay',
      `sandbox-${name}`,
      '-o',
      `lowerdir=${dir},upperdir=${upper},workdir=${work}`,
      dir,
    ]);
  }
  // A /dev/shm of its own: what accounts leave there goes with the sandbox, not to this machine.
  run(['/usr/bin/mount', '-t', 'tmpfs', '-o', 'mode=1777,nosuid,nodev', 'sandbox-shm', '/dev/shm']);
}
