// What filesystem a path is on, as the kernel says (statfs), for what only btrfs needs: a home that
// is a subvolume of its own, and jails copied by reflink since hard links cannot leave a subvolume.
import { lstatSync, statfsSync } from 'node:fs';
import { renameSystemPath } from './files.ts';
import { removeHome } from './home.ts';
import type { CommandRunner } from './run.ts';

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

export const BTRFS = '/usr/bin/btrfs';

/**
 * Makes `dir` (below a directory only root writes) a btrfs subvolume holding what it holds now:
 * a new subvolume beside it is filled by reflink (no data copied), then takes its name.
 */
export async function convertToSubvolume(runner: CommandRunner, dir: string): Promise<void> {
  if (isSubvolume(dir)) return;
  const fresh = `${dir}.subvolume`;
  const old = `${dir}.old`;
  for (const leftover of [fresh, old]) await removeTree(runner, leftover);
  await runner.run([BTRFS, 'subvolume', 'create', '--', fresh]);
  await runner.run(['/usr/bin/cp', '-a', '--reflink=always', '--', `${dir}/.`, fresh]);
  renameSystemPath(dir, old);
  renameSystemPath(fresh, dir);
  await removeTree(runner, old);
}

/** A read-only snapshot of the subvolume `source` at `target`: instant, and nothing in it changes. */
export async function snapshotReadOnly(runner: CommandRunner, source: string, target: string): Promise<void> {
  await runner.run([BTRFS, 'subvolume', 'snapshot', '-r', '--', source, target]);
}

/**
 * Removes `path` whole, a subvolume (a read-only snapshot too) by the kernel's one call on its name,
 * anything else file by file; links are removed, never followed. `path` must be below a directory
 * only root writes.
 */
export async function removeTree(runner: CommandRunner, path: string): Promise<void> {
  if (isSubvolume(path)) await runner.run([BTRFS, 'subvolume', 'delete', '--', path]);
  else await removeHome(path);
}
