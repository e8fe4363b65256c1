// The sandbox's homes: a btrfs filesystem of their own, in a sparse image in the sandbox's directory,
// with quotas on, mounted on /home inside the sandbox. Berth's linux driver sees btrfs there and
// makes each home a subvolume with its qgroup limited (docs/linux-driver.md, "Quotas"), so that the
// sandbox enforces disk quotas as a production server does. The loop device is this machine's: it
// is detached when the sandbox stops, whatever way it stops.
import { closeSync, ftruncateSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './system.ts';

/** Sparse: only what the homes hold takes room on this machine's disk. */
const IMAGE_BYTES = 4 * 1024 ** 3;
const LOSETUP = '/usr/sbin/losetup';

export const homesImage = (dir: string) => join(dir, 'homes.img');

/** Makes the image, a fresh btrfs filesystem (outside the sandbox, before it starts). */
export function makeHomesImage(dir: string): void {
  const image = homesImage(dir);
  const fd = openSync(image, 'wx', 0o600);
  try {
    ftruncateSync(fd, IMAGE_BYTES);
  } finally {
    closeSync(fd);
  }
  // One copy of the metadata: a throwaway filesystem needs no second.
  run(['/usr/sbin/mkfs.btrfs', '-q', '-m', 'single', '--', image]);
}

/**
 * Attaches the image to a loop device (inside the sandbox, before the overlays: afterwards its path
 * could lead into one) and returns the device, for mountHomes once the overlays are in place.
 */
export function attachHomes(dir: string): string {
  return run([LOSETUP, '--find', '--show', '--', homesImage(dir)]).trim();
}

/** Mounts the homes' filesystem on /home, over the machine's own, and switches its quotas on. */
export function mountHomes(device: string): void {
  // A throwaway filesystem needs no write barriers: without them the loop device does not flush
  // its image to this machine's disk at every commit (jailkit's template: 25 s, not 80).
  run(['/usr/bin/mount', '-t', 'btrfs', '-o', 'nobarrier,nodiscard,noatime', '--', device, '/home']);
  // Detaching a device in use marks it to go when its mount goes (as `mount -o loop` does): with
  // the sandbox's namespace, however the sandbox ends.
  run([LOSETUP, '--detach', device]);
  run(['/usr/bin/btrfs', 'quota', 'enable', '/home']);
}

/**
 * Detaches every loop device still holding the image (outside, once the sandbox has ended), for a
 * sandbox that failed between attachHomes and mountHomes.
 */
export function detachHomes(dir: string): void {
  let attached: string;
  try {
    attached = run([LOSETUP, '--noheadings', '--output', 'NAME', '--associated', homesImage(dir)]);
  } catch {
    return;
  }
  for (const device of attached.split('\n').filter(Boolean)) {
    try {
      run([LOSETUP, '--detach', device]);
    } catch {}
  }
}
