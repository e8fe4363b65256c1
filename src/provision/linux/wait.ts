// Waiting for a service to take a change: polled, with a deadline, never forever; and the
// processes a service's master runs, read from /proc, to tell the old generation from the new.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor(what: string, ready: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 5; !ready(); delay = Math.min(delay * 2, 100)) {
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
