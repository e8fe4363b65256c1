// Postfix's tables of Berth's mail domains, served from the mail tables in memory (tables.ts) over
// Postfix's socketmap protocol (socketmap_table(5)): one netstring `name key` a request, one
// netstring reply (`OK value`, `NOTFOUND `, `TEMP reason` or `PERM reason`). Postfix asks on every
// lookup, so a change is live the moment Berth has made it: no table file is written, no Postfix
// process restarted, and the cost of a change does not grow with the number of domains. While
// Berth is down, a lookup fails for the moment and Postfix defers the mail (as the milters do).
//
// Two sockets in Postfix's queue directory, where its chrooted daemons find them by a relative
// name: every table on one that root and Postfix's group alone may reach, and local-senders alone
// on another, for postdrop, which runs as the account with the group postdrop. No account reaches
// either directory.
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import type { LinuxConfig } from '../../../config/index.ts';
import type { LinuxContext } from '../context.ts';
import { giveSocket, makeServiceDirectory, removeFile } from '../files.ts';
import { findSystemUser, systemGroupId } from '../passwd.ts';
import type { PostfixTable } from './lines.ts';

/** Every table, for Postfix's daemons (relative to the queue directory). */
export const TABLES_SOCKET = 'berth/tables.sock';
/** local-senders alone, for postdrop (which is not chrooted: named by its whole path). */
export const POSTDROP_SOCKET = 'berth-postdrop/local-senders.sock';

/** Each table by the name main.cf gives it in `socketmap:unix:<socket>:<name>`. */
export const TABLE_NAMES: Record<PostfixTable, string> = {
  domains: 'domains',
  mailboxes: 'mailboxes',
  senders: 'senders',
  aliases: 'aliases',
  localSenders: 'local-senders',
  localAliases: 'local-aliases',
};

/** The tables whose keys are addresses: Postfix sends the whole address, and no partial key. */
const BY_ADDRESS: ReadonlySet<PostfixTable> = new Set(['mailboxes', 'senders', 'aliases']);

/**
 * How main.cf names one of Berth's tables: on the socket Postfix's daemons reach by a name relative
 * to the queue directory, local-senders on postdrop's own (by its whole path: postdrop is not
 * chrooted).
 */
export function postfixMap(linux: LinuxConfig, table: PostfixTable): string {
  const socket = table === 'localSenders' ? join(linux.postfixQueueDir, POSTDROP_SOCKET) : TABLES_SOCKET;
  return `socketmap:unix:${socket}:${TABLE_NAMES[table]}`;
}

/** A request longer than this (a name and an address are far shorter) ends the connection. */
const MAX_REQUEST = 4096;
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

/** What Postfix's configuration says the answers depend on. */
export interface PostfixSettings {
  /** recipient_delimiter. */
  delimiters: string;
  /** mydestination's domains: the server's own, whose mail local(8) delivers. */
  localDomains: ReadonlySet<string>;
}

/**
 * Answers one request (`name key`), from `lookup`, for the tables `served` alone. The aliases
 * table takes in the accounts' local aliases too: mail to an account's system user at one of the
 * server's own domains (alice@localhost, a bounce to its sendmail's bare sender) goes to its
 * mailbox. They are a virtual alias rather than local(8)'s alias_maps, which may not be asked of
 * a socket (Postfix counts aliases security-sensitive: a file's could run a command).
 */
export function answer(
  request: string,
  served: ReadonlyMap<string, PostfixTable>,
  lookup: (table: PostfixTable, key: string) => string | null,
  settings: PostfixSettings,
): string {
  const space = request.indexOf(' ');
  const table = space > 0 ? served.get(request.slice(0, space)) : undefined;
  if (table === undefined) return 'PERM no such table';
  const key = request.slice(space + 1).toLowerCase();
  if (key === '') return 'NOTFOUND ';
  const keys = BY_ADDRESS.has(table) ? addressKeys(key, settings.delimiters) : [key];
  const tries: [PostfixTable, string][] = keys.map((each) => [table, each]);
  const at = key.lastIndexOf('@');
  if (table === 'aliases' && at > 0 && settings.localDomains.has(key.slice(at + 1)))
    for (const each of keys.slice(0, -1)) tries.push(['localAliases', each.slice(0, each.lastIndexOf('@'))]);
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
      }
    });
  });
  return { server, connections };
}

/**
 * recipient_delimiter (the characters that begin an address's extension), and mydestination's
 * domains (a table or file it names aside).
 */
async function postfixSettings(ctx: LinuxContext): Promise<PostfixSettings> {
  const setting = async (name: string) =>
    (await ctx.runner.run(['/usr/sbin/postconf', '-x', '-h', name])).stdout.trim();
  const destinations = (await setting('mydestination'))
    .split(/[\s,]+/)
    .filter((each) => each !== '' && !each.includes(':') && !each.startsWith('/'));
  return {
    delimiters: await setting('recipient_delimiter'),
    localDomains: new Set(destinations.map((each) => each.toLowerCase())),
  };
}

/** Serves the tables on both sockets; answers how to stop. */
export async function serveTables(
  ctx: LinuxContext,
  lookup: (table: PostfixTable, key: string) => string | null,
): Promise<{ close(): Promise<void> }> {
  const postfix = findSystemUser(ctx.root, 'postfix');
  const postdrop = systemGroupId(ctx.root, 'postdrop');
  if (!postfix || postdrop === undefined) throw new Error('the mail tables need Postfix (no postfix user)');
  const settings = await postfixSettings(ctx);
  const byName = (tables: PostfixTable[]) => new Map(tables.map((table) => [TABLE_NAMES[table], table]));
  const every = byName(Object.keys(TABLE_NAMES) as PostfixTable[]);
  const served = [
    await listen(ctx, TABLES_SOCKET, postfix.gid, every, lookup, settings),
    await listen(ctx, POSTDROP_SOCKET, postdrop, byName(['localSenders']), lookup, settings),
  ];
  return {
    async close() {
      await Promise.all(
        served.map(({ server, connections }) => {
          const closed = new Promise<void>((resolve) => server.close(() => resolve()));
          for (const connection of connections) connection.destroy();
          return closed;
        }),
      );
    },
  };
}

async function listen(
  ctx: LinuxContext,
  name: string,
  gid: number,
  tables: ReadonlyMap<string, PostfixTable>,
  lookup: (table: PostfixTable, key: string) => string | null,
  settings: PostfixSettings,
): Promise<{ server: Server; connections: Set<Socket> }> {
  const socket = ctx.path(join(ctx.linux.postfixQueueDir, name));
  makeServiceDirectory(join(socket, '..'), 0, gid, 0o750);
  const served = socketmapServer(
    (request) => answer(request, tables, lookup, settings),
    (error) => process.emitWarning(`${name}: ${String(error)}`),
  );
  removeFile(socket);
  await new Promise<void>((resolve, reject) => {
    served.server.once('error', reject);
    served.server.listen(socket, () => resolve());
  });
  giveSocket(socket, 0, gid, 0o660);
  return served;
}
