// The milters Berth serves itself, on Unix sockets in directories of Postfix's queue directory
// (where its chrooted daemons find them by a relative name) that only root, Postfix's group and
// the milter's user may enter: no account reaches a milter (one that reached OpenDKIM would have
// any message signed). The sender policy is every smtpd's (submission and port 25); the local
// milter is cleanup's for the mail the account's own programs hand to sendmail, whose envelope
// sender postdrop has already held to the account's: it checks the From headers against the other
// accounts' domains, and the queue budget.
import type { Server, Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { giveSocket, makeServiceDirectory, readIfExists, removeFile } from '../files.ts';
import { findSystemUser } from '../passwd.ts';
import type { DovecotDatabase } from './dovecot-db.ts';
import { type MilterPolicy, serveMilter } from './milter.ts';
import {
  keptSenderOwners,
  listQueue,
  type QueueLimits,
  queueBudget,
  type Refusal,
  withQueueBudget,
} from './queue-budget.ts';
import { localSenderPolicy, parseSenders, senderPolicy, spfChecker, submitted } from './sender-policy.ts';

export const POLICY_SOCKET = 'berth/sender-policy.sock';
export const LOCAL_SOCKET = 'berth/local-mail.sock';
export const DKIM_SOCKET = 'opendkim/opendkim.sock';

const POSTQUEUE = ['/usr/sbin/postqueue', '-j'];

export interface Milters {
  /**
   * Serves one more milter of Berth's at `name` (in `berth/`), its mail counted against its
   * senders' queue budgets and refused for now when over them (mailing lists: lists/component.ts).
   * `lists` are the mailing lists' addresses: mail to or from one of them (or its `+` addresses)
   * counts against the budget of its account's lists together, never the account's own.
   */
  serve(name: string, policy: MilterPolicy, lists?: () => Iterable<string>): Promise<void>;
  /** Learns what each account has waiting in the queue now. */
  listQueue(): Promise<void>;
  /** Stops serving (Postfix then tempfails mail until they are back). */
  close(): Promise<void>;
}

/** Whether `ip` is an address of this server's interfaces, as they are now (loopback included). */
export function serverAddress(ip: string): boolean {
  const plain = ip.replace(/^::ffff:(?=\d+\.)/i, '').toLowerCase();
  return Object.values(networkInterfaces()).some((addresses) =>
    (addresses ?? []).some((address) => address.address.toLowerCase() === plain),
  );
}

/** Postfix's myorigin, which completes a bare sender (`alice` from sendmail) in the queue. */
async function postfixOrigin(ctx: LinuxContext): Promise<string> {
  const setting = async (name: string) =>
    (await ctx.runner.run(['/usr/sbin/postconf', '-x', '-h', name])).stdout.trim();
  const origin = await setting('myorigin');
  if (!origin.startsWith('/')) return origin;
  // Debian's main.cf names a file (/etc/mailname) holding it; without one, myhostname stands in.
  const named = readIfExists(ctx.path(origin))?.split('\n')[0]?.trim();
  return named || setting('myhostname');
}

/**
 * The milters' directories and Berth's milters, served; `tables` gives the Postfix tables they read
 * as they are now, `logins` Dovecot's (dovecot-db.ts).
 */
export async function startMilters(
  ctx: LinuxContext,
  tables: { text(table: 'senders' | 'localSenders'): string },
  logins: DovecotDatabase,
): Promise<Milters> {
  const { linux, config } = ctx;
  const postfix = findSystemUser(ctx.root, 'postfix');
  const opendkim = findSystemUser(ctx.root, 'opendkim');
  if (!postfix) throw new Error('the mail component needs Postfix (no postfix user)');
  const socketDirectory = (path: string, owner: number, mode: number) =>
    makeServiceDirectory(ctx.path(join(linux.postfixQueueDir, path, '..')), owner, postfix.gid, mode);
  socketDirectory(POLICY_SOCKET, 0, 0o750);
  if (opendkim) socketDirectory(DKIM_SOCKET, opendkim.uid, 0o2750);

  const limits: QueueLimits = {
    bytes: linux.mailQueueLimit === null ? null : linux.mailQueueLimit * 1_048_576,
    messages: linux.mailQueueMessages,
  };
  const listLimits: QueueLimits = {
    bytes: linux.mailQueueListsLimit === null ? null : linux.mailQueueListsLimit * 1_048_576,
    messages: linux.mailQueueListsMessages,
  };
  const budgeted = [limits, listLimits].some((l) => l.bytes !== null || l.messages !== null);
  const budget = queueBudget(limits, Date.now, listLimits);
  const origin = await postfixOrigin(ctx);
  let lists: () => Iterable<string> = () => [];
  const owners = keptSenderOwners(
    () => tables.text('localSenders'),
    origin,
    () => lists(),
  );
  const budgeting = (
    policy: MilterPolicy,
    counts: Parameters<typeof withQueueBudget>[3],
    refusal: Refusal = 'tempfail',
  ) => (budgeted ? withQueueBudget(policy, budget, owners, counts, refusal) : policy);

  const senders = senderPolicy({
    senders: () => parseSenders(tables.text('senders')),
    mayLogIn: (login) => logins.has('logins', login.toLowerCase()),
    spfPasses: spfChecker(linux.mailDnsServer, config.hostName),
    isOwnAddress: serverAddress,
  });
  // On smtpd, only submission's mail is an account's to count: port 25's comes from elsewhere.
  const served = [await serve(ctx, POLICY_SOCKET, postfix.gid, budgeting(senders, submitted))];
  // From sendmail, every sender an account may give is its own (postdrop saw to it).
  const local = budgeting(localSenderPolicy(owners), () => true, 'reject');
  served.push(await serve(ctx, LOCAL_SOCKET, postfix.gid, local));

  return {
    async serve(name, policy, addresses) {
      if (addresses) lists = addresses;
      served.push(
        await serve(
          ctx,
          name,
          postfix.gid,
          budgeting(policy, () => true),
        ),
      );
    },
    async listQueue() {
      // Through the spawner: a fork of Berth's own process every few seconds costs it with its size
      // (its page tables copied, then a fault at each page it writes).
      if (budgeted) await listQueue(ctx.runner.stream(POSTQUEUE), budget, owners());
    },
    async close() {
      await Promise.all(served.map(closeServed));
    },
  };
}

async function serve(ctx: LinuxContext, name: string, gid: number, policy: MilterPolicy): Promise<Served> {
  const served = serveMilter(policy, (error) => process.emitWarning(`${name}: ${String(error)}`));
  return listenInQueue(ctx, name, gid, served);
}

/** A server of Berth's for Postfix, and the connections it has. */
export interface Served {
  server: Server;
  connections: Set<Socket>;
}

/** Serves `served` on the Unix socket `name` in Postfix's queue directory, 0660 root:`gid`. */
export async function listenInQueue(
  ctx: LinuxContext,
  name: string,
  gid: number,
  served: Served,
): Promise<Served> {
  const socket = ctx.path(join(ctx.linux.postfixQueueDir, name));
  removeFile(socket);
  await new Promise<void>((resolve, reject) => {
    served.server.once('error', reject);
    served.server.listen(socket, () => resolve());
  });
  giveSocket(socket, 0, gid, 0o660);
  return served;
}

/** Stops serving, the connections cut. */
export function closeServed({ server, connections }: Served): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  for (const connection of connections) connection.destroy();
  return closed;
}
