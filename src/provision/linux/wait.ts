// Waiting for a service to take a change: polled, with a deadline, never forever; and the
// processes a service's master runs, read from /proc, to tell the old generation from the new.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The longest pause between two looks. What a call waits for (Postfix's old processes ending,
 * PHP-FPM's socket) comes within tens of milliseconds: a look costs a read of /proc or a stat,
 * while a pause of 100 ms once made the call wait up to 100 ms past the moment.
 */
export const MAX_POLL_MS = 20;

export async function waitFor(what: string, ready: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 5; !ready(); delay = Math.min(delay * 2, MAX_POLL_MS)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(delay);
  }
}

/** The child processes of `pid` (none when it has gone). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** A process's name (its program's, as /proc has it), or '' when it has gone. */
export function processName(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/** Runs at most `slots` tasks at once; the others wait their turn, first come first served. */
export function limiter(slots: number) {
  let free = slots;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (free === 0) await new Promise<void>((resolve) => waiting.push(resolve));
      else free--;
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else free++;
      }
    },
  };
}
