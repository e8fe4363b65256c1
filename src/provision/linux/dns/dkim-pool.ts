// DKIM keys made ahead: generating an RSA 2048 key costs tens of milliseconds of CPU, which
// createacct would otherwise spend on its path. The pool is a directory root alone may enter, one
// key a file (0600); createacct moves one into place by a rename, which takes each file once
// whoever else asks at the same time. The pool is refilled in the background, off the call's path:
// by a worker thread of its own at nice 19 (dkim-maker.js), and only once no key has been taken
// for a while, so that a burst of createacct calls spends its CPU on its calls and the keys it took
// are made again when the server is quiet. An empty pool is no failure: the key is then made on the
// spot, as before.

import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { makePrivateDirectory, moveSystemPath, syncDirectory, writeFileAtomic } from '../files.ts';

/** How long after a key was taken the refill waits before it makes the next. */
const QUIET_MS = 2_000;

const KEY = '.pem';

export interface DkimPoolOptions {
  /** How many keys to keep ready (`dkim_keys_ahead`). */
  size: number;
  /** How a key's PEM is made (tests count the keys made); a low-priority worker thread by default. */
  generate?: () => Promise<string>;
  /** How long after a take the refill waits. */
  quietMs?: number;
}

export class DkimKeyPool {
  readonly #dir: string;
  readonly #size: number;
  readonly #generate: (() => Promise<string>) | null;
  readonly #quietMs: number;
  /** Whether the pool refills itself (while serving); a CLI command only takes what is there. */
  #filling = false;
  #refill: Promise<void> | null = null;
  /** The keys believed ready, read from the directory when none is left to try. */
  #known: string[] | null = null;
  #lastTake = Number.NEGATIVE_INFINITY;
  /** Ends the refill's wait for quiet (close). */
  #stop = new AbortController();

  /** `dir`: a real path. */
  constructor(dir: string, options: DkimPoolOptions) {
    this.#dir = dir;
    this.#size = options.size;
    this.#generate = options.generate ?? null;
    this.#quietMs = options.quietMs ?? QUIET_MS;
  }

  /** The keys ready, by file name. */
  ready(): string[] {
    try {
      return readdirSync(this.#dir).filter((file) => file.endsWith(KEY) && !file.startsWith('.'));
    } catch {
      return [];
    }
  }

  /**
   * Moves a key made ahead to `dest` (root's, 0600 as it was in the pool), and starts the refill;
   * false when the pool has none (the caller makes one). A key taken is gone from the pool: the
   * rename either moves it to this caller or fails for every other.
   */
  take(dest: string): boolean {
    this.#lastTake = performance.now();
    let taken = false;
    for (const fresh of [false, true]) {
      if (fresh || this.#known === null) this.#known = this.ready();
      while (!taken && this.#known.length > 0)
        taken = moveSystemPath(join(this.#dir, this.#known.pop()!), dest);
      if (taken) break;
    }
    if (taken) syncDirectory(dirname(dest));
    if (this.#filling) void this.fill();
    return taken;
  }

  /** Refills the pool from now on, in the background, whenever a key is taken (while serving). */
  start(): void {
    this.#filling = true;
    void this.fill();
  }

  /**
   * Makes keys until the pool holds its size; one refill at a time. A failure (a full disk) ends
   * this refill: the next take starts another, and meanwhile keys are made on the spot.
   */
  fill(): Promise<void> {
    if (!this.#refill) {
      const refill: Promise<void> = this.#makeKeys().finally(() => {
        if (this.#refill === refill) this.#refill = null;
      });
      this.#refill = refill;
    }
    return this.#refill;
  }

  async #makeKeys(): Promise<void> {
    const maker = this.#generate ? null : new KeyMaker();
    const generate = this.#generate ?? (() => maker!.make());
    try {
      makePrivateDirectory(this.#dir);
      // The directory read again before each key (a fraction of a key's cost): a command (`berth`
      // on the command line) may have taken keys meanwhile, or someone removed them.
      for (;;) {
        this.#known = this.ready();
        if (!this.#filling || this.#known.length >= this.#size) break;
        await this.#quiet();
        if (!this.#filling) break;
        const pem = await generate();
        if (!this.#filling) break;
        const file = `${randomBytes(12).toString('hex')}${KEY}`;
        writeFileAtomic(join(this.#dir, file), pem, 0o600);
      }
    } catch {
      // Keys are made on the spot until a later refill succeeds.
    } finally {
      await maker?.close();
    }
  }

  /** Waits until no key has been taken for the quiet time (or the pool is closed). */
  async #quiet(): Promise<void> {
    for (;;) {
      const left = this.#lastTake + this.#quietMs - performance.now();
      if (left <= 0 || !this.#filling) return;
      await sleep(left, undefined, { signal: this.#stop.signal }).catch(() => {});
    }
  }

  /**
   * Stops refilling, and waits for a key being made (the thread ends only once OpenSSL returns:
   * tens of milliseconds, longer on a machine busy with everything else).
   */
  async close(): Promise<void> {
    this.#filling = false;
    this.#stop.abort();
    this.#stop = new AbortController();
    await this.#refill;
  }
}

/** The low-priority thread that makes the pool's keys, one asked for at a time. */
class KeyMaker {
  #worker: Worker | null = null;
  #pending: { resolve: (pem: string) => void; reject: (error: Error) => void } | null = null;

  make(): Promise<string> {
    const worker = this.#worker ?? this.#start();
    // Held while a key is being made (a test awaiting a refill has nothing else running).
    worker.ref();
    return new Promise<string>((resolve, reject) => {
      this.#pending = { resolve, reject };
      worker.postMessage('key');
    }).finally(() => this.#worker?.unref());
  }

  #start(): Worker {
    const worker = new Worker(new URL('./dkim-maker.js', import.meta.url));
    worker.on('message', (answer: { privatePem?: string; error?: string }) => {
      const pending = this.#pending;
      this.#pending = null;
      if (answer.privatePem) pending?.resolve(answer.privatePem);
      else pending?.reject(new Error(answer.error ?? 'no key'));
    });
    const lost = (error: Error) => {
      this.#worker = null;
      this.#pending?.reject(error);
      this.#pending = null;
    };
    worker.on('error', lost);
    worker.on('exit', () => lost(new Error('the DKIM key thread ended')));
    this.#worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = null;
    await worker?.terminate();
  }
}
