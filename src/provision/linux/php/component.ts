// The php component: one PHP-FPM pool per account, running as the account's user with `pm =
// ondemand` (no process until a request comes), `open_basedir` limited to the home and its own
// temporary directory (sessions and uploads there too), and a socket only the web server's user may
// use. PHP-FPM is reloaded (SIGUSR2, a graceful re-read), never restarted. A suspended account has
// no pool: its PHP cannot run at all.
import { existsSync, readdirSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { type Component, type LinuxContext, type Service, strayFiles } from '../context.ts';
import { readIfExists, removeFile, writeFileAtomic } from '../files.ts';
import { render } from '../templates.ts';
import { waitFor } from '../wait.ts';

const TMP_MODE = 0o700;
const POOL_PREFIX = 'berth-';
const USR2_BIT = 1n << BigInt(constants.signals.SIGUSR2 - 1);

/** The socket nginx passes the account's PHP requests to. */
export function phpSocket(ctx: LinuxContext, user: string): string {
  return join(ctx.linux.phpSocketDir, `${POOL_PREFIX}${user}.sock`);
}

export function phpComponent(ctx: LinuxContext): Component {
  const { linux } = ctx;
  const poolFile = (account: Account) =>
    ctx.path(join(linux.phpPoolDir, `${POOL_PREFIX}${account.user}.conf`));
  const pool = (account: Account) =>
    render('php/pool.conf', {
      user: account.user,
      socket: phpSocket(ctx, account.user),
      web_user: linux.webUser,
      home: account.homedir,
      tmp: join(account.homedir, 'tmp'),
    });

  /**
   * Whether PHP-FPM's master catches SIGUSR2: a master that has just re-executed itself (the
   * reload before) has not yet set its handlers, and the signal would end it.
   */
  const masterCatchesReload = () => {
    const pid = Number.parseInt(readIfExists(ctx.path(linux.phpPidFile)) ?? '', 10);
    if (!(pid > 0)) return false;
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readIfExists(`/proc/${pid}/status`) ?? '')?.[1];
    return caught !== undefined && (BigInt(`0x${caught}`) & USR2_BIT) !== 0n;
  };

  // After the reload, every pool that was on file has its socket and every pool removed has none:
  // a call answers once its site can run PHP, or can no longer.
  const php: Service = {
    name: 'PHP-FPM',
    async reload() {
      if (linux.reloadPhp.length === 0) return;
      await waitFor('PHP-FPM to take a reload', masterCatchesReload);
      // The pools as they stand before the signal, unless changed since: a pool written or removed
      // meanwhile waits for the next reload (the one its own call asks for).
      const dir = ctx.path(linux.phpPoolDir);
      const sockets = ctx.path(linux.phpSocketDir);
      const names = (list: string[], suffix: string) =>
        list
          .filter((n) => n.startsWith(POOL_PREFIX) && n.endsWith(suffix))
          .map((n) => n.slice(0, -suffix.length));
      const pools = names(readdirSync(dir), '.conf').map((name) => ({
        conf: join(dir, `${name}.conf`),
        socket: join(sockets, `${name}.sock`),
      }));
      // A removed pool's socket that PHP-FPM listens on (not a file left by a master killed outright).
      const listening = new Set(
        (readIfExists('/proc/net/unix') ?? '').split('\n').map((line) => line.split(/\s+/)[7] ?? ''),
      );
      const removed = names(existsSync(sockets) ? readdirSync(sockets) : [], '.sock')
        .map((name) => ({ conf: join(dir, `${name}.conf`), socket: join(sockets, `${name}.sock`) }))
        .filter(({ conf, socket }) => !existsSync(conf) && listening.has(socket));
      await ctx.runner.run(linux.reloadPhp);
      await waitFor(
        'PHP-FPM to open its pools',
        () =>
          pools.every(({ conf, socket }) => existsSync(socket) || !existsSync(conf)) &&
          removed.every(({ conf, socket }) => !existsSync(socket) || existsSync(conf)) &&
          masterCatchesReload(),
      );
    },
  };

  const tmpStep = (account: Account) =>
    ctx.step('PHP temporary directory', async () => ctx.accountDirectory(account, ['tmp'], TMP_MODE));
  const writePool = (account: Account) =>
    ctx.fileStep('PHP pool', poolFile(account), 0o644, () => pool(account), php);
  const removePool = (account: Account) =>
    ctx.fileStep('PHP pool', poolFile(account), 0o644, () => null, php);

  return {
    name: 'php',
    services: [php],
    create: (account) => [tmpStep(account), writePool(account)],
    remove: (account) => [removePool(account)],
    suspend: (account) => [removePool(account)],
    unsuspend: (account) => [writePool(account)],
    async reconcile(account) {
      if (account.suspension) removeFile(poolFile(account));
      else {
        await tmpStep(account).run();
        writeFileAtomic(poolFile(account), pool(account), 0o644);
      }
    },
    async purge(account) {
      removeFile(poolFile(account));
    },
    inspect(accounts) {
      const differences: string[] = [];
      for (const account of accounts) {
        const present = existsSync(poolFile(account));
        if (present && account.suspension)
          differences.push(`${account.user}: PHP pool runs for a suspended account`);
        if (!present && !account.suspension) differences.push(`${account.user}: no PHP pool`);
      }
      const expected = new Set(accounts.map((a) => `${POOL_PREFIX}${a.user}.conf`));
      return [
        ...differences,
        ...strayFiles(ctx, linux.phpPoolDir, expected, '.conf', 'PHP pool', (file) =>
          file.startsWith(POOL_PREFIX),
        ),
      ];
    },
  };
}
