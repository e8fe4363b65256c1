// Waiting for a service to take a change: polled, with a deadline, never forever.
import { setTimeout as sleep } from 'node:timers/promises';

export async function waitFor(what: string, ready: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 5; !ready(); delay = Math.min(delay * 2, 100)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(delay);
  }
}
