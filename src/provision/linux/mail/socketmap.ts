// Postfix's tables of Berth's mail domains, served from the mail tables in memory (tables.ts) over
// Postfix's socketmap protocol (socketmap_table(5)): one netstring `name key` a request, one
// netstring reply (`OK value`, `NOTFOUND `, `TEMP reason` or `PERM reason`). Postfix asks on every
// lookup, so a change is live the moment Berth has made it: no table file is written, no Postfix
// process restarted, and the cost of a change does not grow with the number of domains. While
// Berth is down, a lookup fails for the moment and Postfix defers the mail (as the milters do).
//
// One socket in Postfix's queue directory, where its chrooted daemons find it by a relative name,
// that root and Postfix's group alone may reach: no account reaches it. postdrop's local-senders
// stays a file (tables.ts): postdrop is a process of its own for every message sendmail takes and
// reads it whole when it starts, so it needs no reload, and sendmail keeps taking mail while Berth
// is down (postdrop refuses a message when a lookup of that table fails).
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { LinuxConfig } from '../../../config/index.ts';
import type { LinuxContext } from '../context.ts';
import { makeServiceDirectory, readIfExists } from '../files.ts';
import { fileStamp } from '../known-files.ts';
import { findSystemUser } from '../passwd.ts';
import type { PostfixTable } from './lines.ts';
import { closeServed, listenInQueue, serverAddress } from './milters.ts';
import { asciiLower } from './tables.ts';

/** The tables, for Postfix's daemons (relative to the queue directory). */
export const TABLES_SOCKET = 'berth/tables.sock';

/** Each table by the name main.cf gives it in `socketmap:unix:<socket>:<name>`. */
export const TABLE_NAMES: Record<PostfixTable, string> = {
  domains: 'domains',
  mailboxes: 'mailboxes',
  senders: 'senders',
  aliases: 'aliases',
  localAliases: 'local-aliases',
};

/** The tables by their names in a request. */
const BY_NAME: ReadonlyMap<string, PostfixTable> = new Map(
  Object.entries(TABLE_NAMES).map(([table, name]) => [name, table as PostfixTable]),
);

/** The files in postfix_map_dir an older Berth wrote for Postfix (texthash) and Berth now serves. */
export const OLD_TABLE_FILES = ['domains', 'mailboxes', 'senders', 'aliases', 'local-aliases'];

/** The tables whose keys are addresses: Postfix sends the whole address, and no partial key. */
const BY_ADDRESS: ReadonlySet<PostfixTable> = new Set(['mailboxes', 'senders', 'aliases']);

/**
 * How main.cf names one of Berth's tables: on the socket Postfix's daemons reach by a name relative
 * to the queue directory (local-senders: its file).
 */
export function postfixMap(linux: LinuxConfig, table: PostfixTable | 'localSenders'): string {
  if (table === 'localSenders') return `texthash:${join(linux.postfixMapDir, 'local-senders')}`;
  return `socketmap:unix:${TABLES_SOCKET}:${TABLE_NAMES[table]}`;
}

/** A request longer than this (a name and an address are far shorter) ends the connection. */
const MAX_REQUEST = 4096;
/** Replies a client has not read beyond this many bytes: its requests wait until it reads them. */
const MAX_UNREAD = 256 * 1024;
/** The longest reply Postfix takes (socketmap_max_reply_size's default). */
const MAX_REPLY = 100_000;

/**
 * The keys Postfix itself would try in a table of addresses (mail_addr_find): the address, the
 * address without its extension (`bob+news@x` → `bob@x`, by `delimiters`, recipient_delimiter),
 * then the domain's catch-all `@x`.
 */
export function addressKeys(address: string, delimiters: string): string[] {
  const at = address.lastIndexOf('@');
  if (at <= 0) return [address];
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  const keys = [address];
  const cut = [...delimiters].map((d) => local.indexOf(d)).filter((i) => i > 0);
  if (cut.length > 0) keys.push(`${local.slice(0, Math.min(...cut))}@${domain}`);
  keys.push(`@${domain}`);
  return keys;
}

/** What the answers depend on of Postfix's configuration and the server. */
export interface PostfixSettings {
  /** recipient_delimiter. */
  delimiters: string;
  /**
   * Whether mail to the domain is delivered here by local(8): one of mydestination's, or an address
   * literal (`[192.0.2.1]`) of the server's own addresses.
   */
  isLocal(domain: string): boolean;
  /** Whether the system's aliases (/etc/aliases) name the local part: its mail goes by them. */
  isSystemAlias(local: string): boolean;
}

/**
 * Answers one request (`name key`) from `lookup`. The aliases
 * table takes in the accounts' local aliases too: mail to an account's system user at one of the
 * server's own domains (alice@localhost, a bounce to its sendmail's bare sender) goes to its
 * mailbox. They are a virtual alias rather than local(8)'s alias_maps, which may not be asked of
 * a socket (Postfix counts aliases security-sensitive: a file's could run a command); a local
 * part the system's aliases name (postmaster, abuse) keeps going by them, as when local(8) read
 * /etc/aliases first.
 */
export function answer(
  request: string,
  lookup: (table: PostfixTable, key: string) => string | null,
  settings: PostfixSettings,
): string {
  const space = request.indexOf(' ');
  const table = space > 0 ? BY_NAME.get(request.slice(0, space)) : undefined;
  if (table === undefined) return 'PERM no such table';
  const key = asciiLower(request.slice(space + 1));
  if (key === '') return 'NOTFOUND ';
  const keys = BY_ADDRESS.has(table) ? addressKeys(key, settings.delimiters) : [key];
  const tries: [PostfixTable, string][] = keys.map((each) => [table, each]);
  const at = key.lastIndexOf('@');
  if (table === 'aliases' && at > 0 && settings.isLocal(key.slice(at + 1)))
    for (const each of keys.slice(0, -1)) {
      const local = each.slice(0, each.lastIndexOf('@'));
      if (settings.isSystemAlias(local)) break;
      tries.push(['localAliases', local]);
    }
  for (const [from, each] of tries) {
    const value = lookup(from, each);
    if (value === null) continue;
    return Buffer.byteLength(value) > MAX_REPLY - 3 ? 'PERM the entry is too long' : `OK ${value}`;
  }
  return 'NOTFOUND ';
}

const netstring = (text: string) => `${Buffer.byteLength(text)}:${text},`;

/**
 * A socketmap server answering by `reply`; a connection that sends anything but netstrings of a
 * sane length is closed.
 */
export function socketmapServer(
  reply: (request: string) => string,
  onError: (error: unknown) => void,
): { server: Server; connections: Set<Socket> } {
  const connections = new Set<Socket>();
  const server = createServer((socket) => {
    connections.add(socket);
    socket.on('close', () => connections.delete(socket));
    socket.on('error', () => socket.destroy());
    let pending: Buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length > 0) {
        const colon = pending.indexOf(0x3a);
        const digits = pending.subarray(0, colon === -1 ? pending.length : colon).toString('latin1');
        if (!/^\d{0,5}$/.test(digits) || (colon !== -1 && digits === '')) return void socket.destroy();
        if (colon === -1) return;
        const end = colon + 1 + Number(digits);
        if (end - colon - 1 > MAX_REQUEST) return void socket.destroy();
        if (pending.length <= end) return;
        if (pending[end] !== 0x2c) return void socket.destroy();
        const request = pending.subarray(colon + 1, end).toString('utf8');
        pending = pending.subarray(end + 1);
        let text: string;
        try {
          text = reply(request);
        } catch (error) {
          onError(error);
          text = 'TEMP the lookup failed';
        }
        socket.write(netstring(text));
        // A client that sends and does not read waits for its replies to be read.
        if (socket.writableLength > MAX_UNREAD && !socket.isPaused()) {
          socket.pause();
          socket.once('drain', () => socket.resume());
        }
      }
    });
  });
  return { server, connections };
}

/** Whether the aliases file at `path` (/etc/aliases) names a local part; read again when it changes. */
export function systemAliases(path: string): (local: string) => boolean {
  let stamp = '';
  let names = new Set<string>();
  return (local) => {
    const now = fileStamp(path);
    if (now !== stamp) {
      stamp = now;
      names = new Set(
        (readIfExists(path) ?? '')
          .split('\n')
          .flatMap((line) => /^([^\s#:][^:]*):/.exec(line)?.[1] ?? [])
          .map((name) => asciiLower(name.trim().replace(/^"|"$/g, ''))),
      );
    }
    return names.has(local);
  };
}

/** An address literal's address (`[192.0.2.1]`, `[IPv6:2001:db8::1]`), or null. */
export function literalAddress(domain: string): string | null {
  return /^\[(?:ipv6:)?([^\]]+)\]$/i.exec(domain)?.[1] ?? null;
}

/**
 * recipient_delimiter (the characters that begin an address's extension), and what local(8)
 * delivers: mydestination's domains (a table or file it names aside), the address literals of the
 * server's own addresses.
 */
async function postfixSettings(ctx: LinuxContext): Promise<PostfixSettings> {
  const setting = async (name: string) =>
    (await ctx.runner.run(['/usr/sbin/postconf', '-x', '-h', name])).stdout.trim();
  const destinations = new Set(
    (await setting('mydestination'))
      .split(/[\s,]+/)
      .filter((each) => each !== '' && !each.includes(':') && !each.startsWith('/'))
      .map(asciiLower),
  );
  const ownAddress = (domain: string) => {
    const address = literalAddress(domain);
    return address !== null && serverAddress(address);
  };
  return {
    delimiters: await setting('recipient_delimiter'),
    isLocal: (domain) => destinations.has(domain) || ownAddress(domain),
    isSystemAlias: systemAliases(ctx.path('/etc/aliases')),
  };
}

/** Serves the tables; answers how to stop. */
export async function serveTables(
  ctx: LinuxContext,
  lookup: (table: PostfixTable, key: string) => string | null,
): Promise<{ close(): Promise<void> }> {
  const postfix = findSystemUser(ctx.root, 'postfix');
  if (!postfix) throw new Error('the mail tables need Postfix (no postfix user)');
  const settings = await postfixSettings(ctx);
  makeServiceDirectory(ctx.path(join(ctx.linux.postfixQueueDir, TABLES_SOCKET, '..')), 0, postfix.gid, 0o750);
  const served = await listenInQueue(
    ctx,
    TABLES_SOCKET,
    postfix.gid,
    socketmapServer(
      (request) => answer(request, lookup, settings),
      (error) => process.emitWarning(`${TABLES_SOCKET}: ${String(error)}`),
    ),
  );
  return { close: () => closeServed(served) };
}
