// Where an FTP account logs in: its directory pinned by a bind mount at a path of root's alone,
// `<ftp_root_dir>/<user>/<login>`, which the PureDB home names (docs/linux-driver.md, FTP). Pure-FTPd
// resolves the home as root at every login and follows every link on the way: a home below the
// customer's own directories would let the customer swap a component for a link to anywhere
// (another account's public_html, `/`) after the account was made. The pin is made from the
// directory opened one component at a time without following a link (home.ts), and mount binds
// that very descriptor (`/proc/<pid>/fd/<n>`, not canonicalized: mount -c), so the mount is the
// directory that was checked, whatever was renamed or replaced since. What the customer does to
// the path later changes nothing: a renamed directory stays pinned, a removed one leaves the login
// in a deleted, empty directory, and `..` never climbs out of a bind mount (the kernel refuses a
// path that left the mount's root). Mounts do not outlive a reboot: until Berth starts and pins
// again, the login lands in the empty directory of root's below the mount, never elsewhere.
import { closeSync, lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { FtpAccount } from '../../../store/ftp-accounts.ts';
import type { LinuxContext } from '../context.ts';
import { makeDirectory, makePrivateDirectory, readIfExists, removeEmptyDirectory } from '../files.ts';
import { identityOf, openPath } from '../home.ts';

/** An FTP account's directory as the driver reaches it: its names below the home. */
export const componentsOf = (ftp: FtpAccount) => (ftp.directory === '' ? [] : ftp.directory.split('/'));

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** The pinned directory of one FTP account, as the system sees it (the PureDB home's chroot). */
export function pinPath(rootDir: string, user: string, login: string): string {
  if (!NAME.test(user) || !NAME.test(login)) throw new Error(`refusing an FTP root for ${user} ${login}`);
  return join(rootDir, user, login);
}

/**
 * Whose mount namespace to look in: `self` (this process's: Berth's own, where it pins), or a
 * running Pure-FTPd's, as the logins see it (doctor, which an administrator's shell may run in
 * another namespace than the service's), when one runs.
 */
export type View = 'self' | 'ftpd';

/** Pure-FTPd's processes running as root, found in /proc. */
function ftpdProcesses(): string[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => readIfExists(`/proc/${pid}/comm`)?.trim() === 'pure-ftpd')
    .filter((pid) => /^Uid:\s+0\s/m.test(readIfExists(`/proc/${pid}/status`) ?? ''));
}

const namespaceOf = (proc: string) => {
  try {
    return readlinkSync(`/proc/${proc}/ns/mnt`);
  } catch {
    return null;
  }
};

/**
 * The process whose namespace `view` means (its /proc directory's name): this one's when a
 * Pure-FTPd shares it or none runs (or none can be looked into), else the first Pure-FTPd's.
 */
function viewProcess(view: View): string {
  if (view === 'self') return 'self';
  const own = namespaceOf('self');
  const found = ftpdProcesses().filter((pid) => namespaceOf(pid) !== null);
  if (found.length === 0 || found.some((pid) => namespaceOf(pid) === own)) return 'self';
  return found[0]!;
}

/** Whether `path` is a mount point in the process's mount namespace (mountinfo's fifth field). */
function mountedAt(path: string, proc = 'self'): boolean {
  const table = readIfExists(`/proc/${proc}/mountinfo`) ?? '';
  // mountinfo writes a space, a tab, a line break and a backslash as octal escapes.
  const decoded = (field = '') =>
    field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
  return table.split('\n').some((line) => decoded(line.split(' ')[4]) === path);
}

export type PinState = 'pinned' | 'missing' | 'other';

export function ftpPins(ctx: LinuxContext) {
  const { linux } = ctx;
  const userDir = (user: string) => ctx.path(join(linux.ftpRootDir, user));
  const target = (user: string, login: string) => ctx.path(pinPath(linux.ftpRootDir, user, login));
  const mount = (argv: string[]) => ctx.runner.run(['/usr/bin/mount', ...argv]);

  /**
   * The empty directory of root's the login lands in when nothing is mounted on it; its parents,
   * `<ftp_root_dir>` and `<ftp_root_dir>/<user>`, are root's alone (0700): no account lists them,
   * nor reaches a pinned directory through them past its own home's modes.
   */
  const prepare = (user: string, login: string) => {
    makePrivateDirectory(ctx.path(linux.ftpRootDir));
    makePrivateDirectory(userDir(user));
    makeDirectory(target(user, login));
  };

  /** Unmounts whatever is mounted on a pin's directory (in Berth's namespace), every layer. */
  const unmount = async (path: string) => {
    for (let layer = 0; ctx.live && layer < 8 && mountedAt(path); layer++)
      await ctx.runner.run(['/usr/bin/umount', '--lazy', '--', path]);
  };

  /** Takes the pin away (sessions inside keep it until they end) and removes its directory. */
  const unpin = async (user: string, login: string) => {
    const path = target(user, login);
    await unmount(path);
    removeEmptyDirectory(path);
    if (pinned(user).length === 0) removeEmptyDirectory(userDir(user));
  };

  /** The logins pinned for `user` (directories below its FTP root), whatever the store says. */
  const pinned = (user: string): string[] => {
    const dir = userDir(user);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return [];
    return readdirSync(dir).filter((name) => NAME.test(name));
  };

  /** What is mounted on the account's pin now, compared with its directory opened now. */
  const state = (account: Account, ftp: FtpAccount, view: View = 'self'): PinState => {
    const path = target(account.user, ftp.login);
    if (!ctx.live) return lstatSync(path, { throwIfNoEntry: false })?.isDirectory() ? 'pinned' : 'missing';
    const proc = viewProcess(view);
    if (!mountedAt(path, proc)) return 'missing';
    let want: { dev: number; ino: number };
    try {
      want = identityOf(ctx.path(account.homedir), componentsOf(ftp));
    } catch {
      return 'other';
    }
    // The pin as that namespace has it: its root's view of the path.
    const have = lstatSync(proc === 'self' ? path : `/proc/${proc}/root${path}`);
    return want.dev === have.dev && want.ino === have.ino ? 'pinned' : 'other';
  };

  return {
    target,
    state,
    unpin,

    /**
     * Pins the FTP account's directory: opened without following a link (a planted one throws
     * UnsafePath, and the login keeps its empty directory), then bound from that descriptor. A
     * pin already there of another directory (one renamed away since) is replaced.
     */
    async pin(account: Account, ftp: FtpAccount): Promise<void> {
      prepare(account.user, ftp.login);
      if (!ctx.live) return;
      const path = target(account.user, ftp.login);
      const current = state(account, ftp);
      if (current === 'pinned') return;
      if (current === 'other') await unmount(path);
      const fd = openPath(ctx.path(account.homedir), componentsOf(ftp));
      try {
        // Not canonicalized: mount would read the descriptor's path back and look it up again.
        await mount(['--no-canonicalize', '--bind', `/proc/${process.pid}/fd/${fd}`, path]);
        await mount(['--no-canonicalize', '--make-private', path]);
      } finally {
        closeSync(fd);
      }
    },

    pinned,

    /** The users with a directory of pins, whatever the store says. */
    users(): string[] {
      const dir = ctx.path(linux.ftpRootDir);
      if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory()) return [];
      return readdirSync(dir).filter((name) => NAME.test(name));
    },

    /** Removes every pin of `user` and its directory of them. */
    async unpinAll(user: string): Promise<void> {
      for (const login of pinned(user)) await unpin(user, login);
      removeEmptyDirectory(userDir(user));
    },
  };
}

export type FtpPins = ReturnType<typeof ftpPins>;
