// Disk quotas as btrfs qgroups (quota.ts chooses this backend for a home base on btrfs).
import { lstatSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Limit } from '../../../core/values.ts';
import { BTRFS, isSubvolume } from '../filesystems.ts';
import { removeHome, settleDirectory } from '../home.ts';
import {
  type Housed,
  MB,
  notEnforced,
  type QuotaBackend,
  type QuotaContext,
  say,
  show,
} from './quota-backend.ts';

/**
 * The subvolumes at the top of a home that are root's (a jail's usr): the home is root's and the
 * account cannot write its top, so these are Berth's own, outside the quota on purpose.
 */
function rootSubvolumes(home: string): string[] {
  return readdirSync(home).filter((name) => {
    const path = join(home, name);
    return lstatSync(path).uid === 0 && isSubvolume(path);
  });
}

/** Each home's subvolume id, by the home's path, with when that subvolume was made. */
const homeIds = new Map<string, { made: string; id: string }>();

/**
 * What each home base's last sweep listed (btrfs): every subvolume id, all of them seen to, and
 * those the accounts made.
 */
const sweptSubvolumes = new Map<string, { seen: Set<string>; own: Set<string> }>();
/** The filesystem's top subvolume, every other one's first parent. */
const TOP_SUBVOLUME = '5';

/** Homes made in their account's qgroup and not yet limited (btrfs), by path, with when made. */
const freshHomes = new Map<string, { made: string; group: string }>();

/** When a subvolume was made, as its own (its device and birth time): another in its place differs. */
const madeStamp = (home: string) => {
  const { dev, birthtimeMs } = lstatSync(home);
  return `${dev}:${birthtimeMs}`;
};

/** A qgroup's row: the bytes only its subvolumes hold, its limit of those, the qgroups it is in. */
export interface QgroupRow {
  exclusive: number;
  limit: string;
  parents: string[];
}

/** `btrfs qgroup show -pre --raw`'s rows, by qgroup id (`0/257`, `1/1001`). */
export function parseQgroups(shown: string): Map<string, QgroupRow> {
  const rows = new Map<string, QgroupRow>();
  for (const line of shown.split('\n')) {
    const [id, , exclusive, , limit, parents] = line.trim().split(/\s+/);
    if (id && /^\d+\/\d+$/.test(id))
      rows.set(id, {
        exclusive: Number(exclusive),
        limit: limit ?? 'none',
        parents: (parents ?? '').split(','),
      });
  }
  return rows;
}

/**
 * btrfs qgroups. The home is a subvolume, in a qgroup of the account's own one level up (`1/<gid>`,
 * the home's group id), whose limit of exclusive space is the quota: the home, and every subvolume
 * the account makes inside it, which a level-0 limit would leave out (the kernel lets any user make
 * one where it may write). Such a subvolume is put in the account's qgroup by `sweep` (while
 * serving, every second) with what it already holds counted at once; doctor names one not yet
 * put there. A shell jail's usr is a read-only snapshot of root's, outside the qgroup on purpose,
 * and the rest of the jail shares the template's extents, so only what the account writes counts.
 * btrfs counts metadata too, so a limit also bounds the number of files. The commands act on the
 * paths given alone, so they run below another system root too.
 */
export function btrfsQuotas({ runner }: QuotaContext): QuotaBackend {
  const subvolume = (home: string) => {
    if (!isSubvolume(home))
      throw new Error(`${home} is not a btrfs subvolume: no quota can be set on it alone`);
  };
  /** The account's qgroup: level 1, numbered by the home's group (the account's own). */
  const groupOf = (home: string) => `1/${lstatSync(home).gid}`;
  const idOf = async (path: string) =>
    (await runner.run([BTRFS, 'inspect-internal', 'rootid', '--', path])).stdout.trim();
  // btrfs-progs takes no `--` where a qgroup id comes first: the paths are absolute, never options.
  /** Runs a qgroup command whose "already so" answer is no failure. */
  const idempotent = (argv: string[]) =>
    runner.run(argv).catch((error: Error) => {
      if (!/exist/i.test(error.message)) throw error;
    });
  /** Each qgroup of the filesystem `path` is on. */
  const qgroups = async (path: string) =>
    parseQgroups((await runner.run([BTRFS, 'qgroup', 'show', '-pre', '--raw', '--', path])).stdout);
  /** The home's subvolume id, asked once for as long as the home is the same subvolume. */
  const homeId = async (home: string) => {
    const made = madeStamp(home);
    const known = homeIds.get(home);
    if (known?.made === made) return known.id;
    const id = await idOf(home);
    homeIds.set(home, { made, id });
    return id;
  };
  /** Every subvolume of the filesystem `base` is on: its id, the id of the one it is in, its path. */
  const subvolumes = async (base: string) => {
    const listed = await runner.run([BTRFS, 'subvolume', 'list', '-p', '--', base]);
    const found: { id: string; parent: string; path: string }[] = [];
    for (const line of listed.stdout.split('\n')) {
      const match = /^ID (\d+) gen \d+ parent (\d+) top level \d+ path (.+)$/.exec(line);
      if (match) found.push({ id: match[1]!, parent: match[2]!, path: match[3]! });
    }
    return found;
  };
  /** Every subvolume of the filesystem `base` is on, by the id of the one it is in. */
  const subvolumeChildren = async (base: string) => {
    const children = new Map<string, { id: string; path: string }[]>();
    for (const { id, parent, path } of await subvolumes(base)) {
      const siblings = children.get(parent);
      if (siblings) siblings.push({ id, path });
      else children.set(parent, [{ id, path }]);
    }
    return children;
  };
  /**
   * The ids of every subvolume inside the home, at any depth (the account's own, read-only
   * snapshots of them, a jail's usr), each after those inside it: the order they can be deleted in.
   */
  const insideHome = async (home: string) => {
    const children = await subvolumeChildren(dirname(home));
    const ids: string[] = [];
    const visit = (parent: string) => {
      for (const child of children.get(parent) ?? []) {
        visit(child.id);
        ids.push(child.id);
      }
    };
    visit(await idOf(home));
    return ids;
  };
  /**
   * The subvolumes each account made inside its home, at any depth (not the home, not Berth's own
   * jail usr), each with whether its qgroup is in the account's: for each home base one command
   * (every subvolume), and one more (every qgroup) when any is found, whatever the number of homes.
   */
  const nestedSubvolumes = async (homes: readonly string[]) => {
    type Inside = { home: string; group: string; id: string; path: string };
    const found: (Inside & { counted: boolean })[] = [];
    for (const base of new Set(homes.map((home) => dirname(home)))) {
      const children = await subvolumeChildren(base);
      const inside: Inside[] = [];
      for (const home of homes.filter((h) => dirname(h) === base)) {
        const top = await homeId(home);
        // Most homes have no subvolume inside: their entries are not read at all.
        if (!children.has(top)) continue;
        const group = groupOf(home);
        const jail = new Set(rootSubvolumes(home));
        const visit = (parent: string, top: boolean) => {
          for (const child of children.get(parent) ?? []) {
            if (top && jail.has(basename(child.path))) continue;
            inside.push({ home, group, ...child });
            visit(child.id, false);
          }
        };
        visit(top, true);
      }
      const rows = inside.length > 0 ? await qgroups(base) : new Map<string, QgroupRow>();
      for (const one of inside)
        found.push({ ...one, counted: rows.get(`0/${one.id}`)?.parents.includes(one.group) ?? false });
    }
    return found;
  };
  /** Puts each subvolume the accounts made inside their homes in their qgroups; answers their ids. */
  const assignNested = async (housed: readonly Housed[]) => {
    const found = await nestedSubvolumes(housed.map(({ home }) => home).filter((home) => isSubvolume(home)));
    for (const { id, group, home, counted } of found)
      if (!counted) await idempotent([BTRFS, 'qgroup', 'assign', `0/${id}`, group, dirname(home)]);
    return new Set(found.map(({ id }) => id));
  };
  /**
   * Destroys the account's qgroup once its home is deleted. The kernel keeps a deleted subvolume's
   * qgroup, still in the account's, until it has cleaned the subvolume, and refuses to destroy a
   * qgroup that has members (EBUSY): each member is taken out of it first.
   */
  const destroyGroup = async (group: string, base: string) => {
    const rows = await qgroups(base).catch(() => null);
    if (!rows?.has(group)) return;
    for (const [id, { parents }] of rows)
      if (parents.includes(group))
        // The kernel may drop a cleaned subvolume's qgroup meanwhile: destroy says what is left.
        await runner.run([BTRFS, 'qgroup', 'remove', id, group, base]).catch(() => {});
    await runner.run([BTRFS, 'qgroup', 'destroy', group, base]);
  };
  return {
    name: 'btrfs',
    async makeHome(home, owner, mode) {
      // The home is made in the account's qgroup (its group's id, as groupOf will read it once
      // settled): no assign afterwards, no id to look up. Where quotas are off the qgroup cannot
      // be made: the home is then made alone, and setLimit says why no quota can be set.
      const base = dirname(home);
      const group = `1/${owner.gid}`;
      const made = await runner.run([BTRFS, 'qgroup', 'create', group, base]).then(
        () => true,
        (error: Error) => (/exist/i.test(error.message) ? false : null),
      );
      // Made root's, 0755 and empty: nothing can be in it before its owner and mode are set.
      try {
        await runner.run([BTRFS, 'subvolume', 'create', ...(made === null ? [] : ['-i', group]), '--', home]);
      } catch (error) {
        if (made) await runner.run([BTRFS, 'qgroup', 'destroy', group, base]).catch(() => {});
        throw error;
      }
      settleDirectory(home, [], owner, mode);
      if (made !== null) freshHomes.set(home, { made: madeStamp(home), group });
    },
    async removeHome(home, gid) {
      const base = dirname(home);
      const group = isSubvolume(home) ? groupOf(home) : gid === undefined ? null : `1/${gid}`;
      if (isSubvolume(home)) {
        // The kernel deletes a subvolume whole in one call, however many files it holds, but
        // refuses one with another inside: each inside the home (the account's own, a read-only
        // snapshot of them, the jail's usr) goes first, deepest first, by its id, never by a path
        // the account could have replaced by a link; then the home, by its name in the home base
        // (root's). One made meanwhile (by a process that outlived the account's end) is found by
        // the next round.
        for (let round = 1; ; round++) {
          for (const id of await insideHome(home))
            await runner.run([BTRFS, 'subvolume', 'delete', '--subvolid', id, base]);
          const deleted = await runner.run([BTRFS, 'subvolume', 'delete', '--', home]).then(
            () => null,
            (error: Error) => error,
          );
          if (!deleted) break;
          if (round === 3) throw deleted;
        }
        // A home that is a plain directory (made before homes were subvolumes): file by file, in a
        // thread of its own; a subvolume in it is not entered (OtherFilesystem), for doctor to name.
      } else await removeHome(home);
      if (group) await destroyGroup(group, base);
    },
    async setLimit({ home }, quota) {
      subvolume(home);
      const group = groupOf(home);
      // Each command names the home base, not the home: one in a full home fails (EDQUOT).
      const base = dirname(home);
      // A home makeHome just made in its qgroup has it, and its own qgroup no limit: only the
      // limit is left to set. Any other (made by an older Berth, or before a restart) is brought
      // into its qgroup first.
      const known = freshHomes.get(home);
      freshHomes.delete(home);
      const fresh = known?.made === madeStamp(home) && known.group === group;
      if (!fresh) {
        const own = `0/${await idOf(home)}`;
        await idempotent([BTRFS, 'qgroup', 'create', group, base]);
        await idempotent([BTRFS, 'qgroup', 'assign', own, group, base]);
        // The limit is the account's qgroup's; the home's own carries none (an older Berth's did).
        await runner.run([BTRFS, 'qgroup', 'limit', '-e', 'none', own, base]);
      }
      const limit = quota === null ? 'none' : String(quota * MB);
      await runner.run([BTRFS, 'qgroup', 'limit', '-e', limit, group, base]);
    },
    // The account's qgroup holds its home and the subvolumes it made inside: its exclusive bytes
    // are what the quota is held against. One listing for each home base, whatever the number of
    // homes; a home not in its qgroup (quotas not set up) is left out, to be measured otherwise.
    async diskUsage(housed) {
      const found = new Map<string, number>();
      const homes = housed.map(({ home }) => home).filter((home) => isSubvolume(home));
      for (const base of new Set(homes.map((home) => dirname(home)))) {
        const rows = await qgroups(base).catch(() => null);
        if (!rows) continue;
        for (const home of homes.filter((h) => dirname(h) === base)) {
          const group = groupOf(home);
          const held = rows.get(group);
          if (held && rows.get(`0/${await homeId(home)}`)?.parents.includes(group))
            found.set(home, held.exclusive);
        }
      }
      return found;
    },
    async enforce(housed) {
      await assignNested(housed);
    },
    // A subvolume an account made is inside its home two levels down or more (the home is root's:
    // one just inside it is Berth's, a jail's usr), or inside one the account made; a new home is
    // one level inside the base's subvolume, or inside the filesystem's top. So a sweep lists the
    // subvolumes once, and reads the homes (their ids, the qgroups) only when one it has not seen
    // may be an account's: not on every second of a server filling with accounts.
    async sweep(base, homes) {
      const listed = await subvolumes(base);
      const last = sweptSubvolumes.get(base);
      const paths = new Map(listed.map((s) => [s.id, s.path]));
      const mayBeOwn = ({ id, parent, path }: { id: string; parent: string; path: string }) => {
        if (last?.seen.has(id) || parent === TOP_SUBVOLUME) return false;
        const above = paths.get(parent);
        if (above === undefined || !path.startsWith(`${above}/`)) return true;
        return path.slice(above.length + 1).includes('/') || (last?.own.has(parent) ?? true);
      };
      let own = last?.own ?? new Set<string>();
      if (listed.some(mayBeOwn)) own = await assignNested(await homes());
      sweptSubvolumes.set(base, { seen: new Set(paths.keys()), own });
    },
    async inspect(housed) {
      const differences: string[] = [];
      for (const h of housed) {
        const { account, home } = h;
        if (!isSubvolume(home)) {
          if (account.limits.quota !== null)
            differences.push(notEnforced(h, 'the home is not a btrfs subvolume'));
          continue;
        }
        const rows = await qgroups(home).catch((error: Error) => error);
        if (rows instanceof Error) {
          if (account.limits.quota !== null)
            differences.push(notEnforced(h, `btrfs quotas are off on ${dirname(home)} (${rows.message})`));
          continue;
        }
        const group = groupOf(home);
        const field = rows.get(group)?.limit;
        const have: Limit = field === undefined || field === 'none' ? null : Number(field) / MB;
        if (have !== account.limits.quota)
          differences.push(say(h, `btrfs quota is ${show(have)}, not ${show(account.limits.quota)}`));
        const homeRow = rows.get(`0/${await idOf(home)}`);
        if (account.limits.quota !== null && !homeRow?.parents.includes(group))
          differences.push(notEnforced(h, `the home is not in its qgroup ${group}`));
        // A subvolume the account made inside its home counts once it is in the account's qgroup.
        for (const { path, counted } of await nestedSubvolumes([home]))
          if (!counted) differences.push(say(h, `subvolume ${path} inside the home is outside its quota`));
      }
      return differences;
    },
  };
}
