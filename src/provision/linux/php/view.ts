// The view of the system an account's PHP has (component.ts), made in the master's mount namespace
// before any of its PHP runs, and its /etc kept up to date with the system's while it runs.
import { closeSync, existsSync, readlinkSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { LinuxContext } from '../context.ts';
import { makeDirectory, makePrivateDirectory, readIfExists } from '../files.ts';
import { openPath } from '../home.ts';
import { SHARED_WRITABLE } from '../user/leftovers.ts';
import { accountViews, bindCommand, etcSignature, refreshAccountFiles, refreshView } from './etc-view.ts';
import { type MountStep, MS, mountCommand } from './mounts.ts';

/** The /etc each account's PHP sees (etc-view.ts), one directory an account: root's alone. */
const ETC_VIEWS = '/etc/berth/php-etc';

/** `masterPid(user)`: the account's running master, if any. */
export function phpViews(ctx: LinuxContext, masterPid: (user: string) => number | null) {
  const { linux } = ctx;
  const etcView = (user: string) => ctx.path(join(ETC_VIEWS, user));
  /**
   * Where each namespace keeps the system's /etc (for directories it gains later), in a directory
   * root alone may enter: the mount point itself takes the mode of the /etc bound on it.
   */
  const systemEtc = join(linux.phpSocketDir, 'etc', 'system');
  /** The view of /etc for `user`, up to date (etc-view.ts), in a directory root alone may enter. */
  const refreshEtcView = (user: string) => {
    makePrivateDirectory(ctx.path(ETC_VIEWS));
    makeDirectory(etcView(user));
    return refreshView(ctx.path('/etc'), etcView(user), user);
  };
  /** What the system's /etc was when refreshEtc last brought the views up to date. */
  let etcSeen: string | null = null;
  let othersSeen: string | null = null;
  /**
   * Brings every running view up to date when /etc changed: `accounts` are those whose master runs
   * (the others' views are made afresh when their master starts). An account made or removed
   * changes passwd and group alone: each view then gets its two files, from the system's read once
   * (a sweep's cost per view does not grow with the accounts); anything else changed, each view is
   * made again whole.
   */
  const refreshEtc = async (accounts: () => Promise<readonly Account[]>) => {
    const etc = ctx.path('/etc');
    const changed = etcSignature(etc);
    if (changed === etcSeen) return;
    const others = etcSignature(etc, false);
    const running = await accounts();
    // Read and parsed only for running views: most sweeps after a createacct have none.
    const views =
      others === othersSeen && running.length > 0
        ? accountViews(readIfExists(join(etc, 'passwd')) ?? '', readIfExists(join(etc, 'group')) ?? '')
        : null;
    for (const account of running) {
      const pid = masterPid(account.user);
      if (account.suspension || pid === null) continue;
      if (views) {
        refreshAccountFiles(etcView(account.user), views(account.user));
        continue;
      }
      const { made } = refreshEtcView(account.user);
      // A directory the system's /etc has gained is bound in the running namespace, from the
      // system's /etc as the namespace keeps it, where only root may go.
      if (made.length > 0)
        await ctx.runner.run([
          '/usr/bin/nsenter',
          `--target=${pid}`,
          '--mount',
          '--',
          ...bindCommand(systemEtc, '/etc', made),
        ]);
    }
    etcSeen = changed;
    othersSeen = others;
  };

  /**
   * The view of the system the account's PHP has, made in a mount namespace of its own before
   * any of its PHP runs: its own /etc (etc-view.ts: no other account in passwd or group); its tmp
   * as /tmp, /var/tmp, /dev/shm and every other directory all users may write (SHARED_WRITABLE); a
   * /proc that hides other users' processes; its home alone below the home base.
   */
  const privateView = async (account: Account, holder: number) => {
    // The system's directories bound in the view while /etc is still the system's, then the view
    // (with them) over /etc. The view is root's, in a directory of root's alone.
    const etc = etcView(account.user);
    makePrivateDirectory(ctx.path(dirname(systemEtc)));
    makePrivateDirectory(ctx.path(systemEtc));
    const { bound } = refreshEtcView(account.user);
    const base = dirname(account.homedir);
    if (base === '/') throw new Error(`a home base of / cannot be hidden: ${account.homedir}`);
    // The homes' tmpfs is made aside, with the account's home bound in it, then moved over the
    // home base: the home is bound while its path still leads to it.
    const aside = ctx.path(join(linux.phpSocketDir, 'view'));
    makePrivateDirectory(aside);
    const inAside = join(aside, basename(account.homedir));
    const homeFd = openPath(ctx.path(account.homedir), []);
    const tmpFd = openPath(ctx.path(account.homedir), ['tmp']);
    try {
      // Each directory bound is opened first without following a link, and mount(2) is given the
      // path the kernel has for the descriptor (as mount(8) made of a /proc/<pid>/fd path): the
      // descriptor itself is of Berth's mount namespace, which another cannot bind (EINVAL). The
      // home and its tmp are root's entries, which the account cannot move meanwhile.
      const fd = (n: number) => readlinkSync(`/proc/self/fd/${n}`);
      const steps: MountStep[] = [
        { bind: '/etc', at: systemEtc },
        ...bound.map((name) => ({ bind: join('/etc', name), at: join(etc, name), optional: true })),
        { bind: etc, at: '/etc', recursive: true },
        // Every directory all users may write, where the system has it: none is shared with the
        // account next door, and whatever the account writes there counts in its own quota.
        ...SHARED_WRITABLE.filter((dir) => existsSync(ctx.path(dir))).map((dir) => ({
          bind: fd(tmpFd),
          at: dir,
        })),
        {
          mount: 'berth-homes',
          type: 'tmpfs',
          at: aside,
          flags: MS.NOSUID | MS.NODEV,
          data: 'mode=0755,size=64k',
        },
        { mkdir: inAside, mode: 0o751 },
        { bind: fd(homeFd), at: inAside },
        { move: aside, at: base },
        // Last: the descriptors above are reached through the /proc that shows every process.
        {
          mount: 'proc',
          type: 'proc',
          at: '/proc',
          flags: MS.NOSUID | MS.NODEV | MS.NOEXEC,
          data: 'hidepid=invisible',
        },
      ];
      await ctx.runner.run([
        '/usr/bin/nsenter',
        `--target=${holder}`,
        '--mount',
        '--',
        ...mountCommand(steps),
      ]);
    } finally {
      closeSync(homeFd);
      closeSync(tmpFd);
    }
  };

  return { etcView, refreshEtc, privateView };
}
