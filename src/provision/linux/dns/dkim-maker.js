// @ts-check
// Makes the DKIM keys of dkim-pool.ts's pool, in a worker thread of its own at nice 19: an RSA 2048
// key is tens of milliseconds of CPU, and this thread yields it to every other thread of Berth's
// (the API, the calls' steps, the store's writer). The kernel ranks Berth's threads as one group
// against other processes (its autogroup, or its cgroup when the cpu controller is on), so beside
// the accounts' processes the thread weighs what Berth's calls would. JavaScript, not TypeScript: a
// thread loads only JavaScript (docs/decisions.md). Linux gives each thread its own nice value, so
// the server's own thread and Node's thread pool keep theirs. Each message asks for one key; the
// answer is its PEM (PKCS #8).
import { generateKeyPairSync } from 'node:crypto';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';

/** The lowest nice value. */
const LOWEST = 19;

try {
  // The calling thread's own nice value: this thread alone.
  setPriority(LOWEST);
} catch {
  // A system that refuses it: the keys are made at the server's priority, as on the spot.
}

parentPort?.on('message', () => {
  try {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    parentPort?.postMessage({ privatePem: privateKey });
  } catch (error) {
    parentPort?.postMessage({ error: String(error) });
  }
});
