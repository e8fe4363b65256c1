// nginx as a service the linux driver reloads (when Berth starts with a configuration that differs
// from what nginx has): reloaded, never restarted, and waited for. The reload answers once nginx's
// new workers serve the new configuration, and fails when its master refuses the files (it says
// why in its error log, and serves on with what it had).
import { readFileSync } from 'node:fs';
import type { LinuxContext, Service } from '../context.ts';
import { appendedSince, readIfExists, sizeOf } from '../files.ts';
import { childrenOf, waitFor } from '../wait.ts';

/** How long a reloaded nginx may take to have new workers, at most. */
const NGINX_TAKES_MS = 120_000;
/** How long its master may rest, using no CPU and starting no workers, before the reload has failed. */
const NGINX_RESTING_MS = 3_000;

/** The CPU time a process has used (user and system, in clock ticks); -1 once it has gone. */
function cpuTime(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return -1;
  }
}

class NginxResting extends Error {
  constructor() {
    super('nginx did not take the new configuration: its master started no new workers');
  }
}

/** The first `[emerg]` line of nginx's master among lines of its error log: why it refused a configuration. */
function refusal(lines: string, master: number): string | null {
  const line = new RegExp(`\\[emerg\\] ${master}#\\d+: ([^\\n]*)`).exec(lines);
  return line ? line[1]! : null;
}

/** The worker processes of nginx's master, and whether each is winding down after a reload. */
function workers(master: number): Map<number, boolean> {
  const found = new Map<number, boolean>();
  for (const pid of childrenOf(master)) {
    try {
      found.set(pid, readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('shutting down'));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

export function nginxService(ctx: LinuxContext): Service {
  const { linux } = ctx;
  return {
    name: 'nginx',
    async reload() {
      const pidText = readIfExists(ctx.path(linux.nginxPidFile));
      const master = pidText === null ? null : Number(pidText.trim()) || null;
      // A running master whose error log is known tests the files itself: it parses them once on
      // SIGHUP, and one that refuses them logs why and serves on with what it had. `nginx -t`
      // first would parse every site (every certificate) a second time.
      const errorLog =
        master && linux.nginxErrorLog && linux.reloadWeb.length > 0 ? ctx.path(linux.nginxErrorLog) : null;
      if (!errorLog && linux.testWeb.length > 0) await ctx.runner.run(linux.testWeb);
      if (linux.reloadWeb.length === 0) return;
      const before = master ? [...workers(master).keys()] : [];
      let logged = errorLog ? sizeOf(errorLog) : 0;
      await ctx.runner.run(linux.reloadWeb);
      if (!master) return;
      // New connections go to new workers once the old ones have closed their listeners (they
      // say "shutting down"); until then a request could still see the old configuration. The
      // master parses every site first (about 1.3 s of CPU at 1,000), so it is waited for as long
      // as it works; one that rests without new workers has not taken the reload (it refused the
      // files, or it is stopped) and serves the old configuration.
      let cpu = cpuTime(master);
      let working = Date.now();
      try {
        await waitFor(
          'nginx to take the new configuration',
          () => {
            const now = workers(master);
            const fresh = [...now.keys()].some((pid) => !before.includes(pid));
            if (fresh && before.every((pid) => !now.has(pid) || now.get(pid) === true)) return true;
            if (errorLog) {
              const appended = appendedSince(errorLog, logged);
              logged = appended.next;
              const refused = refusal(appended.lines, master);
              if (refused) throw new Error(`nginx refused the new configuration: ${refused}`);
            }
            const spent = cpuTime(master);
            if (spent !== cpu || fresh) {
              cpu = spent;
              working = Date.now();
            } else if (Date.now() - working > NGINX_RESTING_MS) throw new NginxResting();
            return false;
          },
          NGINX_TAKES_MS,
        );
      } catch (error) {
        // A master that rests without saying why: `nginx -t` says what is wrong with the files,
        // if anything is.
        if (error instanceof NginxResting && errorLog && linux.testWeb.length > 0)
          await ctx.runner.run(linux.testWeb);
        throw error;
      }
    },
  };
}
