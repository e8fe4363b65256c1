// A mailing list's directory as mlmmj reads it (lists/component.ts): the directories mlmmj-make-ml
// makes, its control files written from the store's list, and its members (subscribers.d, a file
// per first character, one address a line; mlmmj-sub and mlmmj-unsub change the same files when
// someone subscribes or leaves by mail). Everything in it is the lists user's; the directory is
// that user's alone (0700), as is the directory of every list: members' addresses are private.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  giveFile,
  makeServiceDirectory,
  readIfExists,
  removeServiceDirectory,
  restoreFile,
  writeFileAtomic,
} from '../files.ts';

export const LIST_DIR_MODE = 0o700;
const FILE_MODE = 0o600;
/** What mlmmj-make-ml makes in a list's directory. */
const LIST_DIRECTORIES = [
  'incoming',
  'queue',
  'queue/discarded',
  'archive',
  'text',
  'subconf',
  'unsubconf',
  'bounce',
  'control',
  'moderation',
  'subscribers.d',
  'digesters.d',
  'requeue',
  'nomailsubs.d',
];
/** A post's largest size, in bytes. */
const MAX_POST = 10 * 1_048_576;

/**
 * What may stand in a list's files: one address, nothing that ends a line or names a path (its
 * first character names its file in subscribers.d, so never a dot).
 */
export const SAFE_ADDRESS = /^[^\s/,:;"\\<>()[\].][^\s/,:;"\\<>()[\]]*@[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/;
const SAFE_LOCAL = /^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$/;

export const localOf = (email: string) => email.slice(0, email.lastIndexOf('@'));
export const domainOf = (email: string) => email.slice(email.lastIndexOf('@') + 1);

/**
 * The directory name of a list: `<domain>_<local>` (no domain has `_`, so no two lists share one),
 * or null for an address that is none of a list's.
 */
export function listDirName(email: string): string | null {
  const local = localOf(email);
  const domain = domainOf(email);
  if (!SAFE_LOCAL.test(local) || local.includes('..') || !SAFE_ADDRESS.test(email)) return null;
  return `${domain}_${local}`;
}

/** The list's control files (mlmmj's TUNABLES), by name: null for a switch that is off. */
export function controlFiles(email: string, owner: string, port: number): Record<string, string> {
  return {
    listaddress: `${email}\n`,
    owner: `${owner}\n`,
    // mlmmj-send hands every message to Postfix's lists smtpd (the lists milter knows it by its uid).
    relayhost: '127.0.0.1\n',
    smtpport: `${port}\n`,
    // Posts from members alone (by their From); a refused post is dropped without a notice sent
    // back to its From, which may be forged (no backscatter).
    subonlypost: '',
    nosubonlydenymails: '',
    notoccdenymails: '',
    noaccessdenymails: '',
    // No archive: it would grow outside every quota; so no retrieving old posts, no digests.
    noarchive: '',
    noget: '',
    nodigestsub: '',
    // Members' addresses are the holder's to see (list_mailing_lists), never mailed on request.
    nolistsubsemail: '',
    maxmailsize: `${MAX_POST}\n`,
    nomaxmailsizedenymails: '',
  };
}

export interface ListsUser {
  uid: number;
  gid: number;
}

/** Makes one directory of the lists user's, exactly `mode`; a link in its place is refused. */
function ownDirectory(path: string, owner: ListsUser, mode = LIST_DIR_MODE): void {
  makeServiceDirectory(path, owner.uid, owner.gid, mode);
}

/** Writes one of the list's files whole, the lists user's. */
function ownFile(path: string, content: string, owner: ListsUser): void {
  writeFileAtomic(path, content, FILE_MODE);
  giveFile(path, owner.uid, owner.gid);
}

/**
 * Makes a list's directory as mlmmj-make-ml would (its texts copied from `texts` when there), and
 * writes its control files; what is there (members, mail waiting) is kept.
 */
export function makeListDirectory(
  dir: string,
  control: Record<string, string>,
  owner: ListsUser,
  texts: string,
): void {
  ownDirectory(dir, owner);
  for (const sub of LIST_DIRECTORIES) ownDirectory(join(dir, sub), owner);
  if (!existsSync(join(dir, 'index'))) ownFile(join(dir, 'index'), '', owner);
  for (const [name, content] of Object.entries(control)) ownFile(join(dir, 'control', name), content, owner);
  if (existsSync(texts))
    for (const name of readdirSync(texts)) {
      const text = readIfExists(join(texts, name));
      if (text !== null && !existsSync(join(dir, 'text', name)))
        ownFile(join(dir, 'text', name), text, owner);
    }
}

/** Removes a list's directory and everything mlmmj kept in it (a link in it is removed, not followed). */
export function removeListDirectory(dir: string): void {
  removeServiceDirectory(dir);
}

/** The file of subscribers.d an address is in: its first character's. */
const fileOf = (dir: string, address: string) => join(dir, 'subscribers.d', address[0]!);

/** Every member of the list, those who subscribed by mail too. */
export function membersOf(dir: string): Set<string> {
  const subscribers = join(dir, 'subscribers.d');
  const found = new Set<string>();
  if (!existsSync(subscribers)) return found;
  for (const name of readdirSync(subscribers))
    for (const line of (readIfExists(join(subscribers, name)) ?? '').split('\n'))
      if (line.trim() !== '') found.add(line.trim().toLowerCase());
  return found;
}

/** What the files of subscribers.d held before a change: restored by putBack. */
export type Saved = Map<string, string | null>;

/**
 * Adds `add` and takes away `remove` in the files of subscribers.d (each written whole), leaving
 * every other member (those who subscribed by mail) as it is; answers what the files were.
 */
export function changeMembers(
  dir: string,
  add: readonly string[],
  remove: readonly string[],
  owner: ListsUser,
): Saved {
  const saved: Saved = new Map();
  // The list's directories are the lists user's: each made again, a link in its place refused.
  ownDirectory(dir, owner);
  ownDirectory(join(dir, 'subscribers.d'), owner);
  const safe = (address: string) => SAFE_ADDRESS.test(address);
  const files = new Set([...add, ...remove].filter(safe).map((a) => fileOf(dir, a)));
  for (const file of files) {
    const before = readIfExists(file);
    saved.set(file, before);
    const lines = new Set((before ?? '').split('\n').filter((l) => l.trim() !== ''));
    for (const address of remove) lines.delete(address);
    for (const address of add.filter(safe)) if (fileOf(dir, address) === file) lines.add(address);
    if (lines.size === 0) restoreFile(file, null, FILE_MODE);
    else ownFile(file, [...lines].map((l) => `${l}\n`).join(''), owner);
  }
  return saved;
}

/** Puts the files of subscribers.d back as they were. */
export function putBack(saved: Saved, owner: ListsUser): void {
  for (const [file, content] of saved)
    if (content === null) restoreFile(file, null, FILE_MODE);
    else ownFile(file, content, owner);
}
