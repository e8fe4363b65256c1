// The php component: every account has a PHP-FPM master of its own, started in the account's
// control group (so that suspension and removal end it with every worker and everything they
// forked), in an IPC namespace of its own (its SysV shared memory, queues and semaphores are seen
// by no other account and go with the master) and in a mount namespace of its own where every
// directory all users may write (/tmp, /var/tmp, /dev/shm, /run/lock, /var/lib/php/sessions) is
// the account's `<home>/tmp` (what PHP leaves there counts toward the quota and goes with the
// home), and where /etc is a view of the system's whose passwd and group name no other account
// (etc-view.ts). Its one pool
// runs as the account's user with `pm = ondemand` (no process until a request comes),
// `open_basedir` limited to the home and its temporary directory, and a socket only the web
// server's user may use. The master starts under Berth's seccomp filter (confine/confine.ts), which
// its workers and whatever they run inherit: no btrfs subvolume escapes the quota. No change to one
// account restarts or reloads another's PHP. The master runs only while the account's sites are
// used: Berth's activator (activator.ts) holds the account's socket from createacct on, the
// master is started at the first request that waits on it (which it then answers) and ends once
// it has had no worker for `php_idle_stop` seconds; an idle account costs no process. A suspended
// account has no socket and no master: its PHP cannot run at all.
import { existsSync, readlinkSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { CONFINE, writeConfine } from '../confine/confine.ts';
import type { Component, LinuxContext } from '../context.ts';
import {
  makeDirectory,
  makePrivateDirectory,
  readIfExists,
  removeFile,
  removeServiceDirectory,
  writeFileAtomic,
} from '../files.ts';
import { ensureGroupFile } from '../home.ts';
import type { StartedProcess } from '../run.ts';
import { render } from '../templates.ts';
import { childrenOf, limiter, waitFor } from '../wait.ts';
import { activator } from './activator.ts';
import { inspectPhp } from './inspect.ts';
import { POOL_PREFIX, phpSocket } from './socket.ts';
import { phpViews } from './view.ts';

const TMP_MODE = 0o700;
/** How long after a master failed to start a request waiting for it is refused at once. */
const START_RETRY_MS = 5_000;
/** Masters started at once on requests, at most. */
const STARTS_AT_ONCE = 4;
/** Every how many sweeps (10 s apart) the activator's sockets are checked. */
const SOCKET_CHECK_EVERY = 6;

/** The accounts as the store has them, and where to tell of what fails: what serve is given. */
type Served = { load: (user: string) => Promise<Account | undefined>; log: PhpLog };

/** What the PHP component tells of what it does on its own (masters started at a request). */
export interface PhpLog {
  warn(details: { err: unknown }, message: string): void;
}

export interface PhpComponent extends Component {
  /** Starts masters from now on when a request waits on a socket (`berth serve` alone). */
  serve(load: Served['load'], log: PhpLog): Promise<void>;
  /** Ends the masters that have had no worker for `php_idle_stop` seconds; holds lost sockets again. */
  sweep(): Promise<void>;
  /** Brings the /etc each running master sees up to date with the system's, if it changed since. */
  refreshEtc(): Promise<void>;
}

export function phpComponent(ctx: LinuxContext): PhpComponent {
  const { linux } = ctx;
  const poolFile = (account: Account) => ctx.path(join(linux.phpPoolDir, `${account.user}.conf`));
  const pidFile = (user: string) => join(linux.phpSocketDir, `${POOL_PREFIX}${user}.pid`);
  const logFile = (user: string) => join(linux.phpLogDir, `${user}.log`);
  /**
   * Where every master makes opcache's lock file (unlinked at once, its descriptor kept): root's,
   * outside the home. In the default, /tmp, which is the account's full home when it is at its
   * quota, the master could not start ("Unable to create lock file: Disk quota exceeded").
   */
  const lockDir = join(linux.phpSocketDir, 'lock');
  /**
   * The name the master is handed its socket under (FPM_SOCKETS): a path that never exists, for
   * PHP-FPM removes its socket's path when it ends, and the path nginx connects to stays held.
   */
  const listenKey = (user: string) => join(linux.phpSocketDir, 'inherited', basename(phpSocket(ctx, user)));
  const activate = activator(ctx.path(join(linux.phpSocketDir, 'activator')), ctx.runner);
  /** The accounts whose sockets this Berth holds, by user. */
  const wanted = new Map<string, Account>();
  /** The masters the activator started for this Berth and that run, by user. */
  const masters = new Map<string, number>();
  /** When each master last had a worker (or started), by user. */
  const lastBusy = new Map<string, number>();
  /** Masters starting, by user; and when a start that failed may be tried again. */
  const starting = new Map<string, Promise<void>>();
  const failedUntil = new Map<string, number>();
  /** The activator's masters, as it knows them, once per Berth (a restart finds them running). */
  let known: Promise<void> | null = null;
  const knowMasters = () => {
    known ??= activate.list().then((held) => {
      for (const [user, { pid }] of Object.entries(held))
        if (pid) {
          masters.set(user, pid);
          lastBusy.set(user, Date.now());
        }
    });
    return known.catch((error: unknown) => {
      known = null;
      throw error;
    });
  };
  const pool = (account: Account) =>
    render('php/pool.conf', {
      user: account.user,
      listen: listenKey(account.user),
      pid_file: pidFile(account.user),
      error_log: logFile(account.user),
      home: account.homedir,
      tmp: join(account.homedir, 'tmp'),
      php_error_log: join(account.homedir, 'logs', 'php-error.log'),
      mariadb_socket: linux.mariadbSocket,
    });

  /** The master's pid, when the pid file names a live PHP-FPM master. */
  const masterPid = (user: string): number | null => {
    const pid = Number.parseInt(readIfExists(ctx.path(pidFile(user))) ?? '', 10);
    if (!(pid > 0)) return null;
    const name = readIfExists(`/proc/${pid}/comm`)?.trim() ?? '';
    return name.startsWith('php-fpm') ? pid : null;
  };
  /** Whether the account's master runs outside Berth's seccomp filter (started before it). */
  const unconfined = (user: string) => {
    const pid = masterPid(user);
    return pid !== null && /^Seccomp:\s+0$/m.test(readIfExists(`/proc/${pid}/status`) ?? '');
  };

  const ownNamespace = readlinkSync('/proc/self/ns/mnt');
  const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };
  /** Starts a process, detached from Berth, through the spawner (run.ts), which forks cheaply. */
  const spawnDetached = (argv: string[]): Promise<StartedProcess> => {
    if (!ctx.runner.start) throw new Error('this command runner starts no detached process');
    return ctx.runner.start(argv, env);
  };

  const { etcView, refreshEtc, privateView } = phpViews(ctx, masterPid);

  /**
   * Starts the account's master on its held socket: a holder process makes the account's mount and
   * IPC namespaces (unshare), the view is made in it, then the activator starts the master inside
   * them (nsenter) with the socket, in the account's control group, confined (no_new_privs does
   * not keep a root master from setuid to the pool's user), and it is waited for until it runs.
   */
  const start = async (account: Account) => {
    const { user } = account;
    if (!ctx.live || masters.has(user)) return;
    // A master Berth's activator did not start (one of before it) serves no held socket.
    if (masterPid(user) !== null) await endMaster(user);
    makeDirectory(ctx.path(linux.phpSocketDir));
    makePrivateDirectory(ctx.path(linux.phpLogDir));
    makePrivateDirectory(ctx.path(lockDir));
    // Moved into the account's group off Berth's thread (a cgroup v2 write of cgroup.procs waits
    // about 20 ms for the kernel) while the view is made: it never forks (unshare execs sleep).
    const holder = await spawnDetached([
      '/usr/bin/unshare',
      '--mount',
      '--ipc',
      '--propagation',
      'private',
      '--',
      '/usr/bin/sleep',
      'infinity',
    ]);
    const placing = ctx.groups?.enter(user, holder.pid);
    placing?.catch(() => {});
    try {
      await waitFor(
        `the mount namespace of ${user}'s PHP`,
        () => holder.exited() || readlinkSync(`/proc/${holder.pid}/ns/mnt`) !== ownNamespace,
      );
      if (holder.exited()) throw new Error(`unshare for ${user}'s PHP ended at once`);
      await privateView(account, holder.pid);
      // The master moves itself into the account's group (confine --group) before PHP-FPM runs:
      // everything it ever forks starts inside.
      const groups = (ctx.groups?.directories(user) ?? []).flatMap((dir) => ['--group', dir]);
      const pid = await activate.exec(
        user,
        [
          '/usr/bin/nsenter',
          `--target=${holder.pid}`,
          '--mount',
          '--ipc',
          '--',
          ctx.path(CONFINE),
          '--run',
          ...groups,
          linux.phpFpm,
          '--nodaemonize',
          '--fpm-config',
          poolFile(account),
          '-d',
          `opcache.lockfile_path=${ctx.path(lockDir)}`,
        ],
        env,
        listenKey(user),
      );
      masters.set(user, pid);
      lastBusy.set(user, Date.now());
      const ended = () => !existsSync(`/proc/${pid}`);
      await waitFor(`PHP-FPM of ${user} to start`, () => ended() || masterPid(user) === pid);
      if (ended()) throw new Error(`PHP-FPM of ${user} ended; its log: ${logFile(user)}`);
      await placing;
    } catch (error) {
      await endMaster(user);
      throw error;
    } finally {
      // The master holds the namespace now.
      try {
        process.kill(holder.pid, 'SIGKILL');
      } catch {}
    }
  };

  /** Ends the master, its workers and whatever they started (a master starting, once started). */
  const stop = async (account: Account) => {
    if (!ctx.live) return;
    await starting.get(account.user);
    await end(account);
  };
  /**
   * Ends the master alone, with its workers (its process group: the activator starts it in a
   * session of its own), not the account's shells and cron jobs in its control group: a start that
   * failed, which any visitor of the site can cause.
   */
  const endMaster = async (user: string) => {
    const pid = masterPid(user) ?? masters.get(user);
    if (pid !== undefined && pid !== null)
      for (const target of [-pid, pid])
        try {
          process.kill(target, 'SIGKILL');
        } catch {}
    await waitFor(`PHP-FPM of ${user} to end`, () => masterPid(user) === null);
    forget(user);
  };
  const forget = (user: string) => {
    masters.delete(user);
    removeFile(ctx.path(pidFile(user)));
  };
  /** Ends the master, its workers and whatever they started: the whole control group. */
  const end = async ({ user }: Account) => {
    if (!ctx.groups) return await endMaster(user);
    await ctx.groups.kill(user);
    forget(user);
  };

  /** The account's socket, held by the activator: a request on it starts the master. */
  const hold = async (account: Account) => {
    if (!ctx.live) return;
    makeDirectory(ctx.path(linux.phpSocketDir));
    const web = ctx.systemUser(linux.webUser);
    await activate.hold(account.user, phpSocket(ctx, account.user), web.uid, web.gid);
    wanted.set(account.user, account);
  };
  /** The account's socket closed and gone: nginx's requests fail at once, and start nothing. */
  const release = async (account: Account) => {
    if (!ctx.live) return;
    wanted.delete(account.user);
    await activate.release(account.user);
  };

  /**
   * Starts at once, at most: requests to every site of the server at once (a crawler) start their
   * masters a few at a time, each taking its CPU, while Berth's calls go on beside them.
   */
  const startSlot = limiter(STARTS_AT_ONCE);
  /** A request waits on `user`'s socket: its master is started, at most once at a time. */
  const requested = (user: string, load: (user: string) => Promise<Account | undefined>, log: PhpLog) => {
    if (starting.has(user)) return;
    /** What waits is refused, never left to nginx's minute. */
    const refuse = () => activate.drain(user).catch(() => {});
    const started = (async () => {
      const account = wanted.get(user) ?? (await load(user));
      if (!account || account.suspension) return await refuse();
      // Held by another of Berth's processes (a command): this one starts it.
      if (!wanted.has(user)) wanted.set(user, account);
      if (Date.now() < (failedUntil.get(user) ?? 0)) return await refuse();
      // The activator runs no master for it (an end it told of may have been missed).
      masters.delete(user);
      try {
        // Released while it waited for its turn (suspended, removed): nothing is started.
        await startSlot.run(async () => (wanted.has(user) ? start(account) : undefined));
      } catch (error) {
        log.warn({ err: error }, `PHP-FPM of ${user} could not start`);
        failedUntil.set(user, Date.now() + START_RETRY_MS);
        return await refuse();
      }
      // Released while it started: it ends.
      if (!wanted.has(user)) await end(account);
    })()
      .catch(async (error: unknown) => {
        log.warn({ err: error }, `PHP-FPM of ${user} could not start`);
        await refuse();
      })
      .finally(() => starting.delete(user));
    starting.set(user, started);
  };

  /** What serve was given once it served (the sweep starts what still waits with it), and asked. */
  let serving: Served | null = null;
  let asked: Served | null = null;
  const serve = async (load: (user: string) => Promise<Account | undefined>, log: PhpLog) => {
    if (!ctx.live) return;
    asked = { load, log };
    await knowMasters();
    await activate.listen({
      ready: (user) => void requested(user, load, log),
      exited: (user, pid) => {
        if (masters.get(user) === pid) masters.delete(user);
      },
    });
    serving = { load, log };
  };

  /** Holds again every socket the activator lost (it ended and another started) or whose path went. */
  const holdLost = async () => {
    const { held, absent, waiting } = await activate.check();
    // A request told of and not started (its telling lost, Berth busy or away): started now.
    if (serving) for (const user of waiting) requested(user, serving.load, serving.log);
    const kept = held < wanted.size ? new Set(Object.keys(await activate.list())) : null;
    const missing = kept ? [...wanted.keys()].filter((user) => !kept.has(user)) : [];
    for (const user of [...absent, ...missing]) {
      const account = wanted.get(user);
      if (!account) continue;
      await hold(account);
      // Its master serves the socket that was lost: it ends, and the next request starts another.
      const pid = masters.get(user);
      masters.delete(user);
      if (pid !== undefined)
        try {
          process.kill(pid, 'SIGQUIT');
        } catch {}
    }
  };
  let sweeps = 0;
  const sweep = async () => {
    if (!ctx.live) return;
    if (!serving && asked) await serve(asked.load, asked.log);
    // An activator started again (it ended) holds nothing, and a path removed is no socket: each
    // is held again. Looked at once a minute: the look costs the activator a stat a socket.
    if (sweeps++ % SOCKET_CHECK_EVERY === 0) await holdLost();
    const now = Date.now();
    for (const [user, pid] of masters) {
      if (childrenOf(pid).length > 0) lastBusy.set(user, now);
      // Graceful: it ends with no worker; a request that comes meanwhile waits on the socket. The
      // activator signals it: its own child, never a pid reused since.
      else if (now - (lastBusy.get(user) ?? now) >= linux.phpIdleStop * 1000)
        await activate.stop(user).catch(() => {});
    }
  };

  /** The account's `tmp`, and `logs` with PHP's error log (in the home, counted in its quota). */
  const tmpStep = (account: Account) =>
    ctx.step('PHP directories', async () => {
      ctx.accountDirectory(account, ['tmp'], TMP_MODE);
      // Root's, so that the account cannot make PHP's log unopenable: PHP would then write its
      // errors to the web server's log, in /var/log.
      ensureGroupFile(ctx.path(account.homedir), 'logs', 'php-error.log', ctx.systemUser(account.user).gid);
    });
  const writePool = (account: Account) =>
    ctx.fileStep('PHP pool', poolFile(account), 0o600, () => pool(account));
  const removePool = (account: Account) => ctx.fileStep('PHP pool', poolFile(account), 0o600, () => null);
  const holdStep = (account: Account) =>
    ctx.step(
      'hold the PHP socket',
      () => hold(account),
      async () => {
        await release(account);
        await stop(account);
      },
    );
  const releaseStep = (account: Account) =>
    ctx.step(
      'release the PHP socket',
      () => release(account),
      () => hold(account),
    );
  // Started again at the next request, once the socket is held again.
  const stopStep = (account: Account) => ctx.step('stop PHP-FPM', () => stop(account));

  return {
    name: 'php',
    // The accounts whose master this Berth's activator runs: a few among thousands, and only they
    // have a view to bring up to date.
    refreshEtc: () => refreshEtc(async () => [...masters.keys()].flatMap((user) => wanted.get(user) ?? [])),
    serve,
    sweep,
    // Root's alone: the pools name every account.
    async prepare() {
      makePrivateDirectory(ctx.path(linux.phpPoolDir));
      // The key of the sockets' names, made before any account's pool names its socket.
      phpSocket(ctx, 'root');
      writeConfine(ctx.path(CONFINE), ctx.config.shell);
    },
    create: (account) => [tmpStep(account), writePool(account), holdStep(account)],
    remove: (account) => [releaseStep(account), stopStep(account), removePool(account)],
    // The master's log, kept until the account is gone for good.
    async forget(account) {
      removeFile(ctx.path(logFile(account.user)));
      removeServiceDirectory(etcView(account.user));
    },
    suspend: (account) => [releaseStep(account), stopStep(account)],
    unsuspend: (account) => [writePool(account), holdStep(account)],
    async reconcile(account) {
      if (account.suspension) {
        await release(account);
        await stop(account);
      } else {
        await tmpStep(account).run();
        const outdated = readIfExists(poolFile(account)) !== pool(account);
        writeFileAtomic(poolFile(account), pool(account), 0o600);
        if (outdated) await stop(account);
        await hold(account);
      }
    },
    async resume(account) {
      if (account.suspension || !existsSync(poolFile(account))) return;
      // A master started before Berth confined them, or with a pool Berth now writes otherwise,
      // or not on a socket the activator holds (a master of before it), ends: the next request
      // starts it again, under the filter, with the pool of now.
      const outdated = readIfExists(poolFile(account)) !== pool(account);
      if (outdated) writeFileAtomic(poolFile(account), pool(account), 0o600);
      await hold(account);
      if (ctx.live) {
        await knowMasters();
        const pid = masterPid(account.user);
        // Ended gracefully: its requests in flight finish, the next request starts the master anew.
        if (pid !== null && masters.get(account.user) !== pid) process.kill(pid, 'SIGQUIT');
        else if (pid !== null && (outdated || unconfined(account.user))) await activate.stop(account.user);
      }
    },
    async purge(account) {
      await release(account);
      await stop(account);
      removeFile(poolFile(account));
      removeServiceDirectory(etcView(account.user));
    },
    inspect: (accounts) =>
      inspectPhp(ctx, accounts, { poolFile, running: (user) => masterPid(user) !== null, unconfined }),
  };
}
