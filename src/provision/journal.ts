// The operation journal: before a call runs system steps it writes down which account they touch,
// in a file synced to disk; after the commit (or the undo) the file goes. A file still there at
// start-up belongs to a call the process did not live to finish, and recovery makes the system
// match the store: the account as stored, or no trace of it.
import { randomUUID } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';

export interface JournalEntry {
  user: string;
  domain: string;
  homedir: string;
  operation: string;
  startedAt: string;
  /** Set when the steps were run for another server's transaction: recovery waits for it to end. */
  transaction?: string;
  /**
   * The account's domains the steps touch besides its main one (before and after a domain was
   * added or removed): recovery removes what the system has of those that no account has then.
   */
  domains?: string[];
}

function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class Journal {
  readonly #dir: string;

  constructor(dataDir: string) {
    this.#dir = join(dataDir, 'journal');
  }

  /** Writes the entry durably; returns its id. */
  begin(entry: JournalEntry): string {
    mkdirSync(this.#dir, { recursive: true, mode: 0o700 });
    const id = randomUUID();
    const temporary = join(this.#dir, `.${id}.tmp`);
    const fd = openSync(temporary, 'wx', 0o600);
    try {
      writeSync(fd, JSON.stringify(entry));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, join(this.#dir, `${id}.json`));
    syncDir(this.#dir);
    return id;
  }

  end(id: string): void {
    rmSync(join(this.#dir, `${id}.json`), { force: true });
  }

  /** The entries of calls that never finished, oldest first. */
  pending(): { id: string; entry: JournalEntry }[] {
    let names: string[];
    try {
      names = readdirSync(this.#dir);
    } catch {
      return [];
    }
    const out: { id: string; entry: JournalEntry }[] = [];
    for (const name of names) {
      if (name.startsWith('.')) {
        rmSync(join(this.#dir, name), { force: true }); // written half-way: its steps never ran
        continue;
      }
      if (!name.endsWith('.json')) continue;
      try {
        out.push({
          id: name.slice(0, -5),
          entry: JSON.parse(readFileSync(join(this.#dir, name), 'utf8')) as JournalEntry,
        });
      } catch {
        rmSync(join(this.#dir, name), { force: true });
      }
    }
    return out.sort((a, b) => a.entry.startedAt.localeCompare(b.entry.startedAt));
  }
}
