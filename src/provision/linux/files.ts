// Files the linux driver writes: always to a temporary file in the same directory, synced, then
// renamed over the old one, so that a reader (nginx, BIND) never sees half a file.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** `path` (absolute within the system) as a real path below `root`. */
export function under(root: string, path: string): string {
  return root === '/' ? path : join(root, path);
}

export function writeFileAtomic(path: string, content: string, mode: number): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const temporary = join(dir, `.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temporary, 'wx', mode);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  const dirFd = openSync(dir, 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

export function readIfExists(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Puts a file back as it was: `content` null means it did not exist. */
export function restoreFile(path: string, content: string | null, mode: number): void {
  if (content === null) rmSync(path, { force: true });
  else writeFileAtomic(path, content, mode);
}
