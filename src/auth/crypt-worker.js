// @ts-check
// Runs SHA-512 crypt for the pool in crypt-pool.ts, off the server's event loop. JavaScript, like
// sha512-crypt.js: see there.
import { parentPort } from 'node:worker_threads';
import { sha512Crypt, verifySha512Crypt } from './sha512-crypt.js';

/** @typedef {{ id: number; password: string } & ({ kind: 'hash' } | { kind: 'verify'; hash: string })} CryptJob */
/** @typedef {{ id: number; value: string | boolean } | { id: number; error: string }} CryptResult */

parentPort?.on('message', (/** @type {CryptJob} */ job) => {
  /** @type {CryptResult} */
  let result;
  try {
    const value = job.kind === 'hash' ? sha512Crypt(job.password) : verifySha512Crypt(job.password, job.hash);
    result = { id: job.id, value };
  } catch (error) {
    result = { id: job.id, error: String(error) };
  }
  parentPort?.postMessage(result);
});
