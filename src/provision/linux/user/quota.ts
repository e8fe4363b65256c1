// Disk quotas, enforced by the filesystem the homes are on: Linux user quotas (`setquota`: blocks and
// inodes of the account's uid, ext4 or XFS), or btrfs qgroups (each home a subvolume of its own, its
// qgroup limited). Which one is `[linux] quota`; `auto` asks the kernel what the home base is.
import type { LinuxConfig } from '../../../config/linux.ts';
import type { Limit } from '../../../core/values.ts';
import { onBtrfs } from '../filesystems.ts';
import { createHome, type Owner, removeHome } from '../home.ts';
import { btrfsQuotas } from './btrfs-quota.ts';
import {
  notEnforced,
  type QuotaBackend,
  type QuotaBackendName,
  type QuotaContext,
  say,
  show,
} from './quota-backend.ts';

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
