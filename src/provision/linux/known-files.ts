// Files read at every change whose size grows with the accounts (the user database, the mail
// records and tables), read and parsed again only when they changed: a stat instead of a read.
import { lstatSync } from 'node:fs';
import { readIfExists } from './files.ts';

/**
 * What tells one version of a file from another: its inode (a rewrite that renames a new file over
 * the old gives another), size, and times to the nanosecond; '' when there is none.
 */
export function fileStamp(path: string): string {
  const stat = lstatSync(path, { bigint: true, throwIfNoEntry: false });
  return stat ? `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}` : '';
}

/** What readParsed last made of each file, with the file's stamp then. */
const parsedFiles = new Map<string, { stamp: string; value: unknown }>();

/**
 * `parse` of the file's text (read as readIfExists reads it; null when there is none), made again
 * only when the file is another or changed since (its inode, size and times): for files read at
 * every change whose number or size grows with the accounts (the mail records and tables, the user
 * database), a stat instead of a read and a parse.
 */
export function readParsed<T>(path: string, parse: (text: string) => T): T | null {
  const stamp = fileStamp(path);
  if (stamp === '') {
    parsedFiles.delete(path);
    return null;
  }
  const known = parsedFiles.get(path);
  if (known?.stamp === stamp) return known.value as T;
  const text = readIfExists(path);
  if (text === null) return null;
  const value = parse(text);
  parsedFiles.set(path, { stamp, value });
  return value;
}

/** Of each file this process last wrote by adding lines at its end: its text, the text before, the lines. */
const grownFiles = new Map<string, { text: string; before: string; added: string }>();

/**
 * Tells readParsed the text just written to `path` by this process, for a file it reads whole as
 * text (the user database, passwd.ts): the next read of it is a stat, not the file again.
 * `grown`: the text was `before` with the lines `added` at its end (addedTo).
 */
export function rememberText(path: string, text: string, grown?: { before: string; added: string }): void {
  const stamp = fileStamp(path);
  if (stamp !== '') parsedFiles.set(path, { stamp, value: text });
  if (stamp !== '' && grown) grownFiles.set(path, { text, ...grown });
  else grownFiles.delete(path);
}

/**
 * The lines this process added at the end of `before` to make `text`, the file's text as it wrote
 * it; null when `text` was not made so: a reader of the file that knows `before` need read only them.
 */
export function addedTo(path: string, before: string, text: string): string | null {
  const grown = grownFiles.get(path);
  return grown !== undefined && grown.text === text && grown.before === before ? grown.added : null;
}
