// What filesystem a path is on, as the kernel says (statfs), for what only btrfs needs: a home that
// is a subvolume of its own, and jails copied by reflink since hard links cannot leave a subvolume.
import { lstatSync, statfsSync } from 'node:fs';
import { dirname } from 'node:path';
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

/**
 * Deletes every btrfs subvolume the account made below `<home>/<components…>` (a mailbox's
 * directory), deepest first, by id: a walk enters none (another filesystem to it), nor could it
 * unlink the files of a read-only snapshot. Which ones are below is read from `btrfs subvolume
 * list`, among the descendants of the home's own subvolume alone: the account's, whatever it
 * renamed meanwhile. Nothing when the home is not a subvolume on btrfs.
 */
export async function deleteSubvolumesBelow(
  runner: CommandRunner,
  home: string,
  components: readonly string[],
): Promise<void> {
  if (!isSubvolume(home)) return;
  const base = dirname(home);
  const homeId = (await runner.run([BTRFS, 'inspect-internal', 'rootid', '--', home])).stdout.trim();
  const listed = await runner.run([BTRFS, 'subvolume', 'list', '-p', '--', base]);
  const children = new Map<string, { id: string; path: string }[]>();
  let homePath: string | null = null;
  for (const line of listed.stdout.split('\n')) {
    const match = /^ID (\d+) gen \d+ parent (\d+) top level \d+ path (.+)$/.exec(line);
    if (!match) continue;
    const [, id = '', parent = '', path = ''] = match;
    if (id === homeId) homePath = path;
    children.set(parent, [...(children.get(parent) ?? []), { id, path }]);
  }
  if (homePath === null) return;
  const top = [homePath, ...components].join('/');
  const doomed: string[] = [];
  const visit = (parent: string) => {
    for (const child of children.get(parent) ?? []) {
      visit(child.id);
      if (child.path === top || child.path.startsWith(`${top}/`)) doomed.push(child.id);
    }
  };
  visit(homeId);
  for (const id of doomed) await runner.run([BTRFS, 'subvolume', 'delete', '--subvolid', id, base]);
}
