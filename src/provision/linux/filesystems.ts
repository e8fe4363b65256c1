// What filesystem a path is on, as the kernel says (statfs), for what only btrfs needs: a home that
// is a subvolume of its own, and jails copied by reflink since hard links cannot leave a subvolume.
import { lstatSync, statfsSync } from 'node:fs';

const BTRFS_SUPER_MAGIC = 0x9123683e;
/** The inode number of every btrfs subvolume's top directory (BTRFS_FIRST_FREE_OBJECTID). */
const SUBVOLUME_TOP_INODE = 256;

/** Whether `path` (which must exist) is on a btrfs filesystem. */
export function onBtrfs(path: string): boolean {
  try {
    return statfsSync(path).type === BTRFS_SUPER_MAGIC;
  } catch {
    return false;
  }
}

/** Whether `path` itself (a link is not followed) is the top directory of a btrfs subvolume. */
export function isSubvolume(path: string): boolean {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  return stat?.isDirectory() === true && stat.ino === SUBVOLUME_TOP_INODE && onBtrfs(path);
}
