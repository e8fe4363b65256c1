// Runs SHA-512 crypt for the pool in crypt-pool.ts, off the server's event loop.
import { parentPort } from 'node:worker_threads';
import { sha512Crypt, verifySha512Crypt } from './sha512-crypt.ts';

export type CryptJob = { id: number; password: string } & (
  | { kind: 'hash' }
  | { kind: 'verify'; hash: string }
);
export type CryptResult = { id: number; value: string | boolean } | { id: number; error: string };

parentPort?.on('message', (job: CryptJob) => {
  try {
    const value = job.kind === 'hash' ? sha512Crypt(job.password) : verifySha512Crypt(job.password, job.hash);
    parentPort?.postMessage({ id: job.id, value } satisfies CryptResult);
  } catch (error) {
    parentPort?.postMessage({ id: job.id, error: String(error) } satisfies CryptResult);
  }
});
