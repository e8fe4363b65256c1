// A small pool of worker threads for password hashing, so that computing a hash (milliseconds of
// CPU) never stalls the other requests on the event loop.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { CryptJob, CryptResult } from './crypt-worker.js';

type Pending = { resolve: (value: string | boolean) => void; reject: (error: Error) => void };
type JobWithoutId = CryptJob extends infer J ? (J extends CryptJob ? Omit<J, 'id'> : never) : never;

export class CryptPool {
  readonly #size: number;
  readonly #workers: Worker[] = [];
  readonly #pending = new Map<number, Pending>();
  readonly #load = new Map<Worker, number>();
  #nextId = 1;

  /**
   * Up to `size` workers, each started when a hash would otherwise wait for a busy one: a worker
   * is a whole JavaScript engine (some 25 MB), and most servers verify a password only now and
   * then (a verified one is remembered).
   */
  constructor(size = Math.max(1, Math.min(4, availableParallelism()))) {
    this.#size = size;
  }

  /** How many workers have been started. */
  get started(): number {
    return this.#workers.length;
  }

  #start(): Worker {
    const worker = new Worker(new URL('./crypt-worker.js', import.meta.url));
    worker.on('message', (result: CryptResult) => this.#settle(worker, result));
    worker.on('error', (error) => this.#fail(error));
    worker.unref();
    this.#workers.push(worker);
    this.#load.set(worker, 0);
    return worker;
  }

  // An idle worker must not keep the process alive; a busy one must, or a CLI command would exit
  // before its hash comes back.
  #setLoad(worker: Worker, load: number): void {
    this.#load.set(worker, load);
    if (load > 0) worker.ref();
    else worker.unref();
  }

  #settle(worker: Worker, result: CryptResult): void {
    this.#setLoad(worker, (this.#load.get(worker) ?? 1) - 1);
    const pending = this.#pending.get(result.id);
    this.#pending.delete(result.id);
    if (!pending) return;
    if ('error' in result) pending.reject(new Error(result.error));
    else pending.resolve(result.value);
  }

  #fail(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #run(job: JobWithoutId): Promise<string | boolean> {
    const idlest = this.#workers.reduce<Worker | undefined>(
      (a, b) => (a !== undefined && (this.#load.get(a) ?? 0) <= (this.#load.get(b) ?? 0) ? a : b),
      undefined,
    );
    const worker =
      idlest !== undefined && (this.#load.get(idlest) === 0 || this.#workers.length >= this.#size)
        ? idlest
        : this.#start();
    const id = this.#nextId++;
    this.#setLoad(worker, (this.#load.get(worker) ?? 0) + 1);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ ...job, id });
    });
  }

  async hash(password: string): Promise<string> {
    return String(await this.#run({ kind: 'hash', password }));
  }

  async verify(password: string, hash: string): Promise<boolean> {
    return (await this.#run({ kind: 'verify', password, hash })) === true;
  }

  async close(): Promise<void> {
    await Promise.all(this.#workers.map((worker) => worker.terminate()));
  }
}
