// DKIM keys made ahead: generating an RSA 2048 key costs tens of milliseconds of CPU, which
// createacct would otherwise spend on its path. The pool is a directory root alone may enter, one
// key a file (0600); createacct moves one into place by a rename, which takes each file once
// whoever else asks at the same time, and the pool is refilled in the background, off the call's
// path. An empty pool is no failure: the key is then made on the spot, as before.

import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { makePrivateDirectory, moveSystemPath, syncDirectory, writeFileAtomic } from '../files.ts';
import { type DkimKey, generateDkimKey } from './dkim.ts';

/** How many keys the pool keeps ready while serving: a burst of createacct beyond it waits for RSA. */
export const DKIM_POOL_SIZE = 8;

const KEY = '.pem';

export class DkimKeyPool {
  readonly #dir: string;
  readonly #size: number;
  readonly #generate: () => Promise<DkimKey>;
  /** Whether the pool refills itself (while serving); a CLI command only takes what is there. */
  #filling = false;
  #refill: Promise<void> | null = null;

  /** `dir`: a real path; `generate`: how a key is made (tests count the keys made). */
  constructor(dir: string, size = DKIM_POOL_SIZE, generate: () => Promise<DkimKey> = generateDkimKey) {
    this.#dir = dir;
    this.#size = size;
    this.#generate = generate;
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
    let taken = false;
    for (const file of this.ready()) {
      if (moveSystemPath(join(this.#dir, file), dest)) {
        taken = true;
        break;
      }
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
    try {
      makePrivateDirectory(this.#dir);
      while (this.#filling && this.ready().length < this.#size) {
        const key = await this.#generate();
        if (!this.#filling) break;
        writeFileAtomic(join(this.#dir, `${randomBytes(12).toString('hex')}${KEY}`), key.privatePem, 0o600);
      }
    } catch {
      // Keys are made on the spot until a later refill succeeds.
    }
  }

  /** Stops refilling and waits for a key being made. */
  async close(): Promise<void> {
    this.#filling = false;
    await this.#refill;
  }
}
