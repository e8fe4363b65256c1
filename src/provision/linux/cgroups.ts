// Control groups of accounts: every process of an account (its PHP-FPM master and workers, its SSH
// and SFTP sessions) runs in a group of its own, so that suspension and removal end all of them,
// however they forked, detached or re-parented, and the number of its processes and its memory are
// bounded. A process cannot leave its group: moving one needs write access to the groups' files,
// which are root's.
//
// Both layouts Linux servers have are supported, read from /proc/self/mountinfo: cgroup v2 alone
// (a Debian server under systemd, /sys/fs/cgroup), and v2 beside v1 controllers (pids, memory,
// freezer mounted apart). An account's group is `<mount>/<parent>/<user>` in every hierarchy that
// is mounted; the limits go where their controller is.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const USER = /^[a-z][a-z0-9]{0,15}$/;

export interface CgroupLimits {
  /** Processes (and threads) at most; null for no bound. */
  processes: number | null;
  /** Memory in MB (page cache and tmpfs pages included); null for no bound. */
  memoryMb: number | null;
}

/** Where account groups live in each hierarchy. */
export interface CgroupLayout {
  /** The cgroup v2 directory holding the account groups, or null when v2 is not mounted. */
  unified: string | null;
  /** cgroup v1 hierarchies by controller, each the directory holding the account groups. */
  v1: Partial<Record<'pids' | 'memory' | 'freezer', string>>;
}

/** Reads which cgroup hierarchies are mounted where (the mount points of mountinfo). */
export function detectLayout(
  parent: string,
  mountinfo = readFileSync('/proc/self/mountinfo', 'utf8'),
): CgroupLayout {
  const layout: CgroupLayout = { unified: null, v1: {} };
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const mountPoint = before.split(' ')[4];
    const [type, , superOptions = ''] = after.split(' ');
    if (!mountPoint) continue;
    if (type === 'cgroup2') layout.unified ??= join(mountPoint, parent);
    else if (type === 'cgroup')
      for (const controller of ['pids', 'memory', 'freezer'] as const)
        if (superOptions.split(',').includes(controller)) layout.v1[controller] ??= join(mountPoint, parent);
  }
  return layout;
}

const write = (file: string, value: string) => writeFileSync(file, value);
const readPids = (dir: string): number[] => {
  try {
    return readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean).map(Number);
  } catch {
    return [];
  }
};

export interface AccountGroups {
  readonly layout: CgroupLayout;
  /** Whether any hierarchy is mounted (a server without cgroups cannot group processes). */
  readonly available: boolean;
  /** The directories holding the account groups, one per hierarchy. */
  readonly parents: readonly string[];
  /** Makes the account's group in every hierarchy, with its limits. */
  ensure(user: string, limits: CgroupLimits): void;
  /** Moves a process (and what it forks afterwards) into the account's group. */
  /**
   * Moves a process into the account's group, off Berth's thread: a write of cgroup.procs waits for
   * the kernel (about 20 ms in cgroup v2, which waits for every CPU), and would stop every call.
   */
  enter(user: string, pid: number): Promise<void>;
  /** The processes in the account's group. */
  members(user: string): number[];
  /** Ends every process of the group, and returns once none is left. */
  kill(user: string): Promise<void>;
  /** Ends every process of the group and removes the group. */
  remove(user: string): Promise<void>;
  /** The groups that exist (account user names). */
  list(): string[];
  /** The directories of the account's group (for the login hook and doctor). */
  directories(user: string): string[];
}

export function accountGroups(layout: CgroupLayout): AccountGroups {
  const parents = [layout.unified, ...Object.values(layout.v1)].filter((d): d is string => d !== null);
  const check = (user: string) => {
    if (!USER.test(user)) throw new Error(`refusing a control group for ${JSON.stringify(user)}`);
  };
  const directories = (user: string) => {
    check(user);
    return parents.map((parent) => join(parent, user));
  };
  let prepared = false;
  /** The parent groups, with the controllers the account groups need enabled below them (v2). */
  const prepare = () => {
    if (prepared) return;
    for (const parent of parents) mkdirSync(parent, { recursive: true, mode: 0o755 });
    if (layout.unified) {
      const offered = (dir: string) =>
        (readFileSync(join(dir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/) as string[]).filter((c) =>
          ['pids', 'memory'].includes(c),
        );
      const wanted = offered(layout.unified);
      if (wanted.length > 0) {
        // The mount's root (or the parent's parent) must pass the controllers down first.
        const up = join(layout.unified, '..');
        const upWanted = offered(up).filter((c) => wanted.includes(c));
        if (upWanted.length > 0)
          write(join(up, 'cgroup.subtree_control'), upWanted.map((c) => `+${c}`).join(' '));
        write(join(layout.unified, 'cgroup.subtree_control'), wanted.map((c) => `+${c}`).join(' '));
      }
    }
    prepared = true;
  };
  const unifiedOf = (user: string) => (layout.unified ? join(layout.unified, user) : null);
  const v1Of = (controller: 'pids' | 'memory' | 'freezer', user: string) =>
    layout.v1[controller] ? join(layout.v1[controller], user) : null;

  const setLimits = (user: string, limits: CgroupLimits) => {
    const processes = limits.processes === null ? 'max' : String(limits.processes);
    const bytes = limits.memoryMb === null ? null : limits.memoryMb * 1024 * 1024;
    const unified = unifiedOf(user);
    if (unified && existsSync(join(unified, 'pids.max'))) write(join(unified, 'pids.max'), processes);
    if (unified && existsSync(join(unified, 'memory.max'))) {
      write(join(unified, 'memory.max'), bytes === null ? 'max' : String(bytes));
      // Swap would let an account past its bound; the kernel reclaims its page cache first.
      if (existsSync(join(unified, 'memory.swap.max')))
        write(join(unified, 'memory.swap.max'), bytes === null ? 'max' : '0');
    }
    const pids = v1Of('pids', user);
    if (pids) write(join(pids, 'pids.max'), processes);
    const memory = v1Of('memory', user);
    // v1 takes -1 for no bound.
    if (memory) write(join(memory, 'memory.limit_in_bytes'), bytes === null ? '-1' : String(bytes));
  };

  const members = (user: string) => {
    const pids = new Set<number>();
    for (const dir of directories(user)) for (const pid of readPids(dir)) pids.add(pid);
    return [...pids];
  };

  /** Freezes the group (nothing forks while it is being killed), when a freezer is at hand. */
  const freeze = (user: string, frozen: boolean) => {
    const unified = unifiedOf(user);
    if (unified && existsSync(join(unified, 'cgroup.freeze'))) {
      write(join(unified, 'cgroup.freeze'), frozen ? '1' : '0');
      return;
    }
    const freezer = v1Of('freezer', user);
    if (freezer && existsSync(join(freezer, 'freezer.state')))
      write(join(freezer, 'freezer.state'), frozen ? 'FROZEN' : 'THAWED');
  };

  const kill = async (user: string) => {
    const unified = unifiedOf(user);
    const deadline = Date.now() + 30_000;
    for (let round = 0; members(user).length > 0; round++) {
      if (unified && existsSync(join(unified, 'cgroup.kill'))) {
        // The kernel ends every process of the group at once, a fork in flight included.
        write(join(unified, 'cgroup.kill'), '1');
      } else {
        // Frozen, no process of the group can fork between the reading of the list and the kill;
        // a SIGKILL is taken even while frozen, once the group thaws.
        freeze(user, true);
        for (const pid of members(user))
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
        freeze(user, false);
      }
      if (Date.now() > deadline)
        throw new Error(`the processes of ${user} did not end: ${members(user).join(' ')}`);
      await sleep(round < 20 ? 10 : 100);
    }
  };

  return {
    layout,
    available: parents.length > 0,
    parents,
    ensure(user, limits) {
      prepare();
      for (const dir of directories(user)) mkdirSync(dir, { recursive: true, mode: 0o755 });
      setLimits(user, limits);
    },
    async enter(user, pid) {
      if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no process ${pid}`);
      for (const dir of directories(user)) await writeFile(join(dir, 'cgroup.procs'), String(pid));
    },
    members,
    kill,
    async remove(user) {
      const dirs = directories(user).filter((dir) => existsSync(dir));
      if (dirs.length === 0) return;
      await kill(user);
      for (const dir of dirs) {
        // A group's directory goes once its last process has gone; the kernel may take a moment.
        for (let tries = 0; ; tries++) {
          try {
            rmdirSync(dir);
            break;
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === 'ENOENT') break;
            if (tries > 100) throw error;
            await sleep(20);
          }
        }
      }
    },
    list() {
      const names = new Set<string>();
      for (const parent of parents)
        if (existsSync(parent))
          for (const entry of readdirSync(parent, { withFileTypes: true }))
            if (entry.isDirectory() && USER.test(entry.name)) names.add(entry.name);
      return [...names].sort();
    },
    directories,
  };
}
