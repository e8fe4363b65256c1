// The sandbox's services as children of its first process: each started with its own log (root's
// alone) and umask, watched, waited for until it answers, and stopped, Berth first. A signal, the
// input closing or a service dying asks for the stop; start-up checks for it while it waits.
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** A line on standard error, for whoever started the sandbox. */
export function say(text: string): void {
  process.stderr.write(`sandbox: ${text}\n`);
}

export interface Service {
  name: string;
  argv: string[];
  env?: Record<string, string>;
  /** The signal that stops it gracefully. */
  stop: NodeJS.Signals;
  /** Its umask: 0022 unless given. */
  umask?: number;
  child?: ChildProcess;
}

export class Supervisor {
  readonly #services: Service[] = [];
  #stopping: Promise<void> | null = null;
  #failed = false;
  #stopWanted = false;
  #wake = () => {};
  /** Settles once the stop is asked for. */
  readonly stopRequested = new Promise<void>((resolve) => {
    this.#wake = resolve;
  });

  /** Whether a service stopped by itself. */
  get failed(): boolean {
    return this.#failed;
  }

  requestStop(): void {
    this.#stopWanted = true;
    this.#wake();
  }

  /** Starts a service, its output going to `log`. */
  start(service: Service, log: string): void {
    // The services' logs name every account (mail's senders and recipients): root's alone.
    mkdirSync('/var/log/sandbox', { recursive: true, mode: 0o700 });
    chmodSync('/var/log/sandbox', 0o700);
    const out = openSync(log, 'a', 0o600);
    // A child takes its umask from this process at spawn.
    const umask = process.umask(service.umask ?? 0o022);
    try {
      service.child = spawn(service.argv[0]!, service.argv.slice(1), {
        stdio: ['ignore', out, out],
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C', ...service.env },
      });
    } finally {
      process.umask(umask);
    }
    service.child.on('exit', (code, signal) => {
      if (this.#stopping) return;
      this.#failed = true;
      say(`${service.name} stopped (${signal ?? `exit ${code}`}); its log: ${log}`);
      try {
        process.stderr.write(readFileSync(log, 'utf8').split('\n').slice(-15).join('\n'));
      } catch {}
      this.requestStop();
    });
    this.#services.push(service);
  }

  /** Waits until `ready`; throws, with the end of its log, after `seconds` or once the stop is asked for. */
  async waitUntil(what: string, ready: () => Promise<boolean> | boolean, seconds = 30): Promise<void> {
    const deadline = Date.now() + seconds * 1000;
    while (!(await ready())) {
      if (this.#stopWanted) throw new Error(`stopped while waiting for ${what}`);
      if (Date.now() > deadline) {
        const log = `/var/log/sandbox/${what.toLowerCase()}.log`;
        const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-15).join('\n') : '';
        throw new Error(
          `${what} did not start within ${seconds} s${tail ? `; the end of ${log}:\n${tail}` : ''}`,
        );
      }
      await sleep(50);
    }
  }

  /** Stops every service started, last first but Berth before all, then `after`; once. */
  stopAll(after: () => Promise<void>): Promise<void> {
    this.#stopping ??= (async () => {
      // Berth first, so that no call is cut by a service going away under it.
      const berthFirst = [...this.#services]
        .reverse()
        .sort((a, b) => Number(b.name === 'Berth') - Number(a.name === 'Berth'));
      for (const service of berthFirst) {
        const child = service.child;
        if (!child || child.exitCode !== null || child.signalCode !== null) continue;
        child.kill(service.stop);
        const ended = new Promise((resolve) => child.once('exit', resolve));
        if ((await Promise.race([ended, sleep(15_000, 'late', { ref: false })])) === 'late')
          child.kill('SIGKILL');
      }
      await after();
    })();
    return this.#stopping;
  }
}
