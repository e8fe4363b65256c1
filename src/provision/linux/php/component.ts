// The php component: every account has a PHP-FPM master of its own, started in the account's
// control group (so that suspension and removal end it with every worker and everything they
// forked) and in a mount namespace of its own where /tmp, /var/tmp and /dev/shm are the account's
// `<home>/tmp` (what PHP leaves there counts toward the quota and goes with the home). Its one pool
// runs as the account's user with `pm = ondemand` (no process until a request comes),
// `open_basedir` limited to the home and its temporary directory, and a socket only the web
// server's user may use. No change to one account restarts or reloads another's PHP. A suspended
// account has no master: its PHP cannot run at all.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { type Component, type LinuxContext, strayFiles } from '../context.ts';
import { makeDirectory, makePrivateDirectory, readIfExists, removeFile, writeFileAtomic } from '../files.ts';
import { openPath } from '../home.ts';
import { render } from '../templates.ts';
import { waitFor } from '../wait.ts';

const TMP_MODE = 0o700;
const POOL_PREFIX = 'berth-';
/** The directories an account's PHP sees as its own temporary directory. */
const PRIVATE_TMP = ['/tmp', '/var/tmp', '/dev/shm'];

/** The socket nginx passes the account's PHP requests to. */
export function phpSocket(ctx: LinuxContext, user: string): string {
  return join(ctx.linux.phpSocketDir, `${POOL_PREFIX}${user}.sock`);
}

export interface PhpComponent extends Component {
  /** Whether the account's master runs. */
  running(account: Account): boolean;
}

export function phpComponent(ctx: LinuxContext): PhpComponent {
  const { linux } = ctx;
  const poolFile = (account: Account) => ctx.path(join(linux.phpPoolDir, `${account.user}.conf`));
  const pidFile = (user: string) => join(linux.phpSocketDir, `${POOL_PREFIX}${user}.pid`);
  const pool = (account: Account) =>
    render('php/pool.conf', {
      user: account.user,
      socket: phpSocket(ctx, account.user),
      pid_file: pidFile(account.user),
      error_log: join(linux.phpLogDir, `${account.user}.log`),
      web_user: linux.webUser,
      home: account.homedir,
      tmp: join(account.homedir, 'tmp'),
    });

  /** The master's pid, when the pid file names a live PHP-FPM master. */
  const masterPid = (user: string): number | null => {
    const pid = Number.parseInt(readIfExists(ctx.path(pidFile(user))) ?? '', 10);
    if (!(pid > 0)) return null;
    const name = readIfExists(`/proc/${pid}/comm`)?.trim() ?? '';
    return name.startsWith('php-fpm') ? pid : null;
  };
  const running = (account: Account) => ctx.live && masterPid(account.user) !== null;

  const ownNamespace = readlinkSync('/proc/self/ns/mnt');
  /**
   * Starts the account's master: in its control group before it can fork, then its temporary
   * directories bound in its own mount namespace, then waited for until its socket answers.
   */
  const start = async (account: Account) => {
    const { user } = account;
    if (!ctx.live || masterPid(user) !== null) return;
    const groups = ctx.groups;
    makeDirectory(ctx.path(linux.phpSocketDir));
    makePrivateDirectory(ctx.path(linux.phpLogDir));
    removeFile(ctx.path(phpSocket(ctx, user)));
    let child: ChildProcess;
    let exited = false;
    const home = ctx.path(account.homedir);
    const tmpFd = openPath(home, ['tmp']);
    try {
      child = spawn(
        '/usr/bin/unshare',
        [
          '--mount',
          '--propagation',
          'private',
          '--',
          linux.phpFpm,
          '--nodaemonize',
          '--fpm-config',
          poolFile(account),
        ],
        { detached: true, stdio: 'ignore', env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' } },
      );
      child.on('error', () => {});
      child.once('exit', () => {
        exited = true;
      });
      const pid = child.pid;
      if (pid === undefined) throw new Error('unshare did not start');
      child.unref();
      try {
        // With pm = ondemand the master forks no worker before its socket is there, which is after
        // this: every process its pool ever runs starts inside the group.
        groups?.enter(user, pid);
        // unshare has made the namespace once /proc says another one; mounts go only there.
        await waitFor(
          `PHP-FPM of ${user} to have its own mount namespace`,
          () => exited || readlinkSync(`/proc/${pid}/ns/mnt`) !== ownNamespace,
        );
        if (exited) throw new Error(`PHP-FPM of ${user} ended at once`);
        // The account's tmp, opened without following a link, is what each bind mount takes.
        const source = `/proc/${process.pid}/fd/${tmpFd}`;
        for (const target of PRIVATE_TMP)
          await ctx.runner.run([
            '/usr/bin/nsenter',
            `--target=${pid}`,
            '--mount',
            '--',
            '/usr/bin/mount',
            '--bind',
            source,
            target,
          ]);
        // A /proc of its own that shows the account's processes alone, whatever the system's is.
        await ctx.runner.run([
          '/usr/bin/nsenter',
          `--target=${pid}`,
          '--mount',
          '--',
          '/usr/bin/mount',
          '-t',
          'proc',
          '-o',
          'hidepid=invisible,nosuid,nodev,noexec',
          'proc',
          '/proc',
        ]);
        await waitFor(
          `PHP-FPM of ${user} to open its socket`,
          () => exited || (existsSync(ctx.path(phpSocket(ctx, user))) && masterPid(user) === pid),
        );
        if (exited)
          throw new Error(`PHP-FPM of ${user} ended; its log: ${join(linux.phpLogDir, `${user}.log`)}`);
      } catch (error) {
        await stop(account);
        throw error;
      }
    } finally {
      closeSync(tmpFd);
    }
  };

  /** Ends the master, its workers and whatever they started: the whole control group. */
  const stop = async (account: Account) => {
    if (!ctx.live) return;
    const { user } = account;
    if (ctx.groups) await ctx.groups.kill(user);
    else {
      const pid = masterPid(user);
      if (pid !== null) process.kill(pid, 'SIGKILL');
      await waitFor(`PHP-FPM of ${user} to end`, () => masterPid(user) === null);
    }
    removeFile(ctx.path(phpSocket(ctx, user)));
    removeFile(ctx.path(pidFile(user)));
  };

  const tmpStep = (account: Account) =>
    ctx.step('PHP temporary directory', async () => ctx.accountDirectory(account, ['tmp'], TMP_MODE));
  const writePool = (account: Account) =>
    ctx.fileStep('PHP pool', poolFile(account), 0o644, () => pool(account));
  const removePool = (account: Account) => ctx.fileStep('PHP pool', poolFile(account), 0o644, () => null);
  const startStep = (account: Account) =>
    ctx.step(
      'start PHP-FPM',
      () => start(account),
      () => stop(account),
    );
  const stopStep = (account: Account) =>
    ctx.step(
      'stop PHP-FPM',
      () => stop(account),
      () => start(account),
    );

  return {
    name: 'php',
    running,
    create: (account) => [tmpStep(account), writePool(account), startStep(account)],
    remove: (account) => [stopStep(account), removePool(account)],
    suspend: (account) => [stopStep(account)],
    unsuspend: (account) => [writePool(account), startStep(account)],
    async reconcile(account) {
      if (account.suspension) await stop(account);
      else {
        await tmpStep(account).run();
        writeFileAtomic(poolFile(account), pool(account), 0o644);
        await start(account);
      }
    },
    async resume(account) {
      if (!account.suspension && existsSync(poolFile(account))) await start(account);
    },
    async purge(account) {
      await stop(account);
      removeFile(poolFile(account));
    },
    inspect(accounts) {
      const differences: string[] = [];
      for (const account of accounts) {
        const present = existsSync(poolFile(account));
        if (!account.suspension && !present) differences.push(`${account.user}: no PHP pool`);
        if (!ctx.live) continue;
        const up = masterPid(account.user) !== null;
        if (up && account.suspension) differences.push(`${account.user}: PHP runs for a suspended account`);
        if (!up && !account.suspension) differences.push(`${account.user}: PHP-FPM does not run`);
      }
      const expected = new Set(accounts.map((a) => `${a.user}.conf`));
      return [
        ...differences,
        ...strayFiles(ctx, linux.phpPoolDir, expected, '.conf', 'PHP pool', () =>
          existsSync(ctx.path(linux.phpPoolDir)),
        ),
      ];
    },
  };
}
