// Whether anything was committed to an SQLite database in WAL mode, told without a transaction.
// Every commit, from any connection in any process, rewrites the wal-index header at the start of
// the database's -shm file (its frame count, checksums and salts; SQLite's "WAL-mode file format").
// Reading those bytes is one pread; PRAGMA data_version would say the same but takes and releases
// a read lock on the file to say it, which costs several times more on every API call.
import { closeSync, openSync, readSync } from 'node:fs';

/** The two copies of the wal-index header SQLite keeps, 48 bytes each. */
const HEADERS = 96;

export interface WalIndex {
  /** Changes whenever a transaction has been committed since it was last read. */
  version(): string;
  close(): void;
}

/** Reads `<path>-shm`; while that cannot be read, `fallback` (PRAGMA data_version) answers. */
export function walIndex(path: string, fallback: () => string): WalIndex {
  const header = Buffer.alloc(HEADERS);
  let fd: number | null = null;
  return {
    version() {
      try {
        fd ??= openSync(`${path}-shm`, 'r');
        if (readSync(fd, header, 0, HEADERS, 0) === HEADERS) return header.toString('latin1');
      } catch {
        // Not yet made: the first connection to read the database makes it.
      }
      return `data_version ${fallback()}`;
    },
    close() {
      if (fd !== null) closeSync(fd);
      fd = null;
    },
  };
}
