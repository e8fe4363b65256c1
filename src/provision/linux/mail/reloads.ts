// The mail services' reloads: each service whose tables a change rewrote reads them again, the
// other not. Postfix asks Berth for the tables of its domains on every lookup (socketmap.ts) and
// Dovecot its database (dovecot-db.ts): neither is reloaded for an account's change. The mailing
// lists' table (lists/component.ts) is a file Postfix reads when a process starts: Postfix reloads
// for it. OpenDKIM reads its tables at start and on SIGUSR1. A change that leaves every table as
// it was reloads nothing. The two reload side by side, each signalled by Berth itself unless a
// command is configured: Postfix's master SIGHUP, as `postfix reload` ends by doing (the script's
// checks before it cost a dozen processes, 40 ms and more), OpenDKIM SIGUSR1 (a `pkill` cost a
// process, 14 to 19 ms on the path of every call that changed a table).
import { readlinkSync } from 'node:fs';
import type { LinuxContext, Service } from '../context.ts';
import { readIfExists } from '../files.ts';
import { childrenOf, processName, waitFor } from '../wait.ts';
import type { TableReader } from './lines.ts';

/**
 * Postfix's programs that read none of the tables Berth writes: the queue manager (it asks
 * trivial-rewrite, which reads them, where each message goes), pickup, the delivery agents to
 * other hosts and to Dovecot (smtp, lmtp), and the services beside them. A reload waits for none
 * of them: one that is busy ends only when its work is done, and a queue manager waiting on a
 * delivery whose DNS answer was slow outlived the reload by seconds, each call waiting for it
 * until the wait's limit.
 */
const READS_NO_TABLE = new Set([
  'qmgr',
  'pickup',
  'showq',
  'smtp',
  'lmtp',
  'bounce',
  'error',
  'discard',
  'flush',
  'verify',
  'anvil',
  'scache',
  'tlsmgr',
  'postlogd',
]);

export function mailReloads(ctx: LinuxContext): {
  service: Service;
  /** Notes the readers of the tables a write changed (what mailTables' writeTables answers). */
  tablesWritten(readers: ReadonlySet<TableReader>): void;
} {
  const { linux, runner } = ctx;
  /** The readers of the tables changed since the last reload began: the services it reloads. */
  let changed = new Set<TableReader>();
  /** Whether the tables were written since then at all. */
  let written = false;

  // Below another system root there is no service to reload.
  const run = async (argv: string[]) => {
    if (ctx.live && argv.length > 0) await runner.run(argv);
  };
  /**
   * Postfix's processes read the tables when they start: after a reload the old ones end as soon as
   * they are idle, and a new connection meets a new process. One still busy with a client ends
   * after it, taking no other; it is not waited for beyond a moment. Those that read no table
   * (READS_NO_TABLE) are not waited for at all.
   */
  async function reloadPostfix(): Promise<void> {
    const master = ctx.live ? pidIn(linux.postfixPidFile) : 0;
    const before = master ? childrenOf(master).filter((pid) => !READS_NO_TABLE.has(processName(pid))) : [];
    if (linux.reloadMail.length > 0) await run(linux.reloadMail);
    else if (master) signalProgram(master, 'master', "Postfix's master", linux.postfixPidFile, 'SIGHUP');
    if (!master) return;
    const lingering = () => {
      const now = childrenOf(master);
      return before.filter((pid) => now.includes(pid));
    };
    await waitFor('Postfix to take the new tables', () => lingering().length === 0, 2_000).catch(() => {
      // Said, so that what keeps a reload waiting can be found.
      const left = lingering().map((pid) => `${processName(pid)} (${pid})`);
      if (left.length > 0) process.emitWarning(`Postfix's ${left.join(', ')} still ran 2 s after its reload`);
    });
  }

  /** A reload by `command` when one is configured, else `signal` to the process `pidFile` names. */
  async function reloadBy(
    command: string[],
    pidFile: string,
    program: string,
    name: string,
    signal: NodeJS.Signals,
  ): Promise<void> {
    if (command.length > 0) return run(command);
    const pid = ctx.live ? pidIn(pidFile) : 0;
    if (pid) signalProgram(pid, program, name, pidFile, signal);
  }

  /**
   * The pid a pid file names; 0 when it names none (no file, or one still being written): the
   * service does not run yet, and reads the tables when it starts.
   */
  function pidIn(pidFile: string): number {
    const pid = Number(readIfExists(ctx.path(pidFile))?.trim() ?? '');
    return Number.isInteger(pid) && pid > 0 ? pid : 0;
  }

  /** `signal` to `pid`, once /proc shows it runs `program` (not a pid reused). */
  function signalProgram(
    pid: number,
    program: string,
    name: string,
    pidFile: string,
    signal: NodeJS.Signals,
  ): void {
    let exe: string;
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      throw new Error(`${name} (pid ${pid}, from ${pidFile}) does not run`);
    }
    // A program an upgrade replaced while it runs is `<path> (deleted)` there, and still the service.
    if (!exe.replace(/ \(deleted\)$/, '').endsWith(`/${program}`))
      throw new Error(`pid ${pid} of ${pidFile} is not ${name} but ${exe}`);
    process.kill(pid, signal);
  }

  return {
    service: {
      name: 'mail services',
      async reload() {
        const taken = changed;
        // Nothing written through the tables (recovery after a restart): every service reads them.
        const all = !written;
        changed = new Set();
        written = false;
        try {
          const reloads: Promise<void>[] = [];
          if (all || taken.has('postfix')) reloads.push(reloadPostfix());
          if (all || taken.has('opendkim'))
            reloads.push(
              reloadBy(linux.reloadDkim, linux.opendkimPidFile, 'opendkim', 'OpenDKIM', 'SIGUSR1'),
            );
          const failed = (await Promise.allSettled(reloads)).find((outcome) => outcome.status === 'rejected');
          if (failed) throw failed.reason;
        } catch (error) {
          // What this reload did not make live is the next one's.
          for (const reader of taken) changed.add(reader);
          written = true;
          throw error;
        }
      },
    },
    tablesWritten(readers) {
      written = true;
      for (const reader of readers) changed.add(reader);
    },
  };
}
