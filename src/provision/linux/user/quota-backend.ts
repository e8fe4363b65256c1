// What a disk quota backend does (quota.ts chooses one: Linux user quotas or btrfs qgroups), and
// what the backends share.
import type { LinuxConfig } from '../../../config/linux.ts';
import type { Limit } from '../../../core/values.ts';
import type { Account } from '../../../store/accounts.ts';
import type { Owner } from '../home.ts';
import type { CommandRunner } from '../run.ts';

export type QuotaBackendName = 'linux' | 'btrfs' | 'none';

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
  /** Brings what the account made since into its quota (QuotaBackend.sweep, or asked). */
  enforce?(housed: readonly Housed[]): Promise<void>;
  /**
   * The sweep of a home base (while serving, every second): enforce for the homes there when a
   * subvolume may have been made inside one since the last sweep; `homes` read only then.
   */
  sweep?(base: string, homes: () => Promise<readonly Housed[]>): Promise<void>;
  /** What `berth doctor` says: quotas not enforced, or limits other than the store's. */
  inspect(housed: readonly Housed[]): Promise<string[]>;
  /**
   * The bytes each account takes, by home, as the filesystem counts them for its quota: one command
   * for all the homes, whatever their number. A home left out has to be measured otherwise.
   */
  diskUsage?(housed: readonly Housed[]): Promise<Map<string, number>>;
}

export const MB = 1024 * 1024;
export const say = ({ account }: Housed, what: string) => `${account.user}: ${what}`;
export const notEnforced = (h: Housed, why: string) =>
  say(h, `disk quota of ${h.account.limits.quota} MB not enforced: ${why}`);
export const show = (limit: Limit) => (limit === null ? 'unlimited' : `${limit} MB`);
