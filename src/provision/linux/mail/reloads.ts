// The mail services' reloads: each service whose tables a change rewrote reads them again, the
// others not. Postfix's texthash tables are read when a process starts and never again
// (postconf(5): "texthash: does not detect changes after the file is read"): Postfix reloads.
// Dovecot's auth looks at a passwd-file's time and size at most once a second, so a change within
// the second of a lookup would be missed until the next (and a password changed within the second
// keeps both): Dovecot reloads. OpenDKIM reads its tables at start and on SIGUSR1. A mailbox's
// password so reloads Dovecot alone, a forwarder Postfix alone, and a change that leaves every
// table as it was reloads nothing. Postfix's master is sent SIGHUP by Berth itself, as `postfix
// reload` ends by doing: the script's checks before it cost a dozen processes (40 ms and more, on
// the path of every call that changes a table).
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
    const pidText = readIfExists(ctx.path(linux.postfixPidFile));
    const master = pidText === null ? 0 : Number(pidText.trim());
    const before = master ? childrenOf(master).filter((pid) => !READS_NO_TABLE.has(processName(pid))) : [];
    if (linux.reloadMail.length > 0 || !ctx.live) await run(linux.reloadMail);
    else if (master) signalMaster(master);
    if (!master || !ctx.live) return;
    await waitFor(
      'Postfix to take the new tables',
      () => {
        const now = childrenOf(master);
        return before.every((pid) => !now.includes(pid));
      },
      2_000,
    ).catch(() => {});
  }

  /** SIGHUP to the process the pid file names, once it is Postfix's master (not a pid reused). */
  function signalMaster(pid: number): void {
    let program: string;
    try {
      program = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      throw new Error(`Postfix's master (pid ${pid}, from ${linux.postfixPidFile}) does not run`);
    }
    if (!program.endsWith('/master'))
      throw new Error(`pid ${pid} of ${linux.postfixPidFile} is not Postfix's master but ${program}`);
    process.kill(pid, 'SIGHUP');
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
          if (all || taken.has('postfix') || taken.has('postdrop')) await reloadPostfix();
          if (all || taken.has('dovecot')) await run(linux.reloadImap);
          if (all || taken.has('opendkim')) await run(linux.reloadDkim);
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
