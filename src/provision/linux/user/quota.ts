// Disk quotas, enforced by the filesystem the homes are on: Linux user quotas (`setquota`: blocks and
// inodes of the account's uid, ext4 or XFS), or btrfs qgroups (each home a subvolume of its own, its
// qgroup limited). Which one is `[linux] quota`; `auto` asks the kernel what the home base is.
import { lstatSync, readdirSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { LinuxConfig } from '../../../config/linux.ts';
import type { Limit } from '../../../core/values.ts';
import type { Account } from '../../../store/accounts.ts';
import { BTRFS, isSubvolume, onBtrfs } from '../filesystems.ts';
import { createHome, type Owner, removeHome, settleDirectory } from '../home.ts';
import type { CommandRunner } from '../run.ts';

export type QuotaBackendName = 'linux' | 'btrfs' | 'none';

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

/** Homes made in their account's qgroup and not yet limited (btrfs), by path, with when made. */
const freshHomes = new Map<string, { made: string; group: string }>();

/** When a subvolume was made, as its own (its device and birth time): another in its place differs. */
const madeStamp = (home: string) => {
  const { dev, birthtimeMs } = lstatSync(home);
  return `${dev}:${birthtimeMs}`;
};

/** The backend for homes made in `homeBase` (a real path below the system root). */
export function chooseQuotaBackend(linux: LinuxConfig, homeBase: string): QuotaBackendName {
  switch (linux.quota) {
    case 'none':
    case 'btrfs':
      return linux.quota;
    case 'linux':
      if (!linux.quotaFilesystem) throw new Error('[linux] quota = "linux" needs quota_filesystem');
      return 'linux';
    default:
      if (onBtrfs(homeBase)) return 'btrfs';
      return linux.quotaFilesystem ? 'linux' : 'none';
  }
}

/** What the backends need: the configuration, the one runner, and whether the root is `/`. */
export interface QuotaContext {
  linux: LinuxConfig;
  runner: CommandRunner;
  live: boolean;
}

/** An account and its home as a real path below the system root. */
export interface Housed {
  account: Account;
  home: string;
}

export interface QuotaBackend {
  name: QuotaBackendName;
  /** Makes the home with this owner and mode; it must not exist yet. */
  makeHome(home: string, owner: Owner, mode: number): Promise<void>;
  /**
   * Removes the home and everything in it, never following a link in it, off the server's thread.
   * `gid`, the account's group, names its quota's own objects when the home is gone already (a
   * removal cut short, run again).
   */
  removeHome(home: string, gid?: number): Promise<void>;
  /** Puts `quota` (MB, null for none) in force for the account. */
  setLimit(housed: Housed, quota: Limit): Promise<void>;
  /** Brings what the account made since into its quota (while serving, every second). */
  enforce?(housed: readonly Housed[]): Promise<void>;
  /** What `berth doctor` says: quotas not enforced, or limits other than the store's. */
  inspect(housed: readonly Housed[]): Promise<string[]>;
  /**
   * The bytes each account takes, by home, as the filesystem counts them for its quota: one command
   * for all the homes, whatever their number. A home left out has to be measured otherwise.
   */
  diskUsage?(housed: readonly Housed[]): Promise<Map<string, number>>;
}

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

/** A user's row of `repquota -u -p`: KiB used, and the hard limits of KiB and of files. */
export interface UserQuotaRow {
  usedKiB: number;
  blocks: number;
  inodes: number;
}

/** `repquota -u -p`'s rows, by user name (-p: grace times as numbers, the same columns in each). */
export function parseRepquota(report: string): Map<string, UserQuotaRow> {
  const rows = new Map<string, UserQuotaRow>();
  for (const line of report.split('\n')) {
    const row = /^(\S+)\s+[-+]{2}\s+(\d+)\s+\d+\s+(\d+)\s+\d+\s+\d+\s+\d+\s+(\d+)/.exec(line);
    if (row) rows.set(row[1]!, { usedKiB: Number(row[2]), blocks: Number(row[3]), inodes: Number(row[4]) });
  }
  return rows;
}

const MB = 1024 * 1024;
const say = ({ account }: Housed, what: string) => `${account.user}: ${what}`;
const notEnforced = (h: Housed, why: string) =>
  say(h, `disk quota of ${h.account.limits.quota} MB not enforced: ${why}`);
const show = (limit: Limit) => (limit === null ? 'unlimited' : `${limit} MB`);

const plainHome = async (home: string, owner: Owner, mode: number) => createHome(home, owner, mode);
const removePlainHome = (home: string) => removeHome(home);

export function quotaBackend(ctx: QuotaContext, name: QuotaBackendName): QuotaBackend {
  if (name === 'btrfs') return btrfsQuotas(ctx);
  if (name === 'linux') return linuxQuotas(ctx);
  return {
    name,
    makeHome: plainHome,
    removeHome: removePlainHome,
    setLimit: async () => {},
    // Below another system root no quota could be in force anyway: those are tests of single parts.
    inspect: async (housed) =>
      ctx.live
        ? housed
            .filter((h) => h.account.limits.quota !== null)
            .map((h) => notEnforced(h, 'no quota backend (set [linux] quota, see docs/linux-driver.md)'))
        : [],
  };
}

/**
 * Linux user quotas on `quota_filesystem`: hard (and soft) limits of blocks (KiB) and of inodes for
 * the account's uid. setquota has no --prefix: below another system root it would change this
 * machine's quotas, so it runs only on a live system.
 */
function linuxQuotas({ linux, runner, live }: QuotaContext): QuotaBackend {
  const fs = linux.quotaFilesystem!;
  /** setquota's 0 is "no limit"; a quota of 0 MB is the smallest limit it can set instead. */
  const limitsOf = (quota: Limit) =>
    quota === null
      ? { blocks: 0, inodes: 0 }
      : { blocks: Math.max(1, quota * 1024), inodes: Math.max(1, quota * linux.quotaInodesPerMb) };
  /** Every user's row of the quota report, or null when user quotas are off on the filesystem. */
  const report = async () => {
    const state = await runner.run(['/usr/sbin/quotaon', '-p', '-u', '--', fs]).catch(() => null);
    if (!state || !/ is on\b/.test(state.stdout)) return null;
    return parseRepquota((await runner.run(['/usr/sbin/repquota', '-u', '-p', '--', fs])).stdout);
  };
  return {
    name: 'linux',
    makeHome: plainHome,
    removeHome: removePlainHome,
    async setLimit({ account }, quota) {
      if (!live) return;
      const { blocks, inodes } = limitsOf(quota);
      const [b, i] = [String(blocks), String(inodes)];
      await runner.run(['/usr/sbin/setquota', '-u', '--', account.user, b, b, i, i, fs]);
    },
    async inspect(housed) {
      const limited = housed.filter((h) => h.account.limits.quota !== null);
      if (!live || housed.length === 0) return [];
      const found = await report();
      if (!found) return limited.map((h) => notEnforced(h, `user quotas are off on ${fs}`));
      const differences: string[] = [];
      for (const h of housed) {
        const want = limitsOf(h.account.limits.quota);
        const have = found.get(h.account.user) ?? { blocks: 0, inodes: 0 };
        if (have.blocks !== want.blocks || have.inodes !== want.inodes)
          differences.push(
            say(
              h,
              `user quota on ${fs} is ${have.blocks} KiB and ${have.inodes} files, not ${want.blocks} KiB and ${want.inodes} files (${show(h.account.limits.quota)})`,
            ),
          );
      }
      return differences;
    },
    // The quota counts every file the uid owns on the filesystem: what the limit is held against.
    // A user the report leaves out owns nothing there (repquota lists no user without use or limit).
    async diskUsage(housed) {
      if (!live || housed.length === 0) return new Map();
      const found = await report();
      if (!found) return new Map();
      return new Map(
        housed.map(({ account, home }) => [home, (found.get(account.user)?.usedKiB ?? 0) * 1024]),
      );
    },
  };
}

/**
 * btrfs qgroups. The home is a subvolume, in a qgroup of the account's own one level up (`1/<gid>`,
 * the home's group id), whose limit of exclusive space is the quota: the home, and every subvolume
 * the account makes inside it, which a level-0 limit would leave out (the kernel lets any user make
 * one where it may write). Such a subvolume is put in the account's qgroup by `enforce` (while
 * serving, every second) with what it already holds counted at once; doctor names one not yet
 * put there. A shell jail's usr is a read-only snapshot of root's, outside the qgroup on purpose,
 * and the rest of the jail shares the template's extents, so only what the account writes counts.
 * btrfs counts metadata too, so a limit also bounds the number of files. The commands act on the
 * paths given alone, so they run below another system root too.
 */
function btrfsQuotas({ runner }: QuotaContext): QuotaBackend {
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
  /** Every subvolume of the filesystem `base` is on, by the id of the one it is in. */
  const subvolumeChildren = async (base: string) => {
    const listed = await runner.run([BTRFS, 'subvolume', 'list', '-p', '--', base]);
    const children = new Map<string, { id: string; path: string }[]>();
    for (const line of listed.stdout.split('\n')) {
      const match = /^ID (\d+) gen \d+ parent (\d+) top level \d+ path (.+)$/.exec(line);
      if (!match) continue;
      const [, id = '', parent = '', path = ''] = match;
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
      const homes = housed.map(({ home }) => home).filter((home) => isSubvolume(home));
      for (const { id, group, home, counted } of await nestedSubvolumes(homes))
        if (!counted) await idempotent([BTRFS, 'qgroup', 'assign', `0/${id}`, group, dirname(home)]);
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
