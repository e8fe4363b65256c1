// What an account leaves outside its home, removed with it once its processes have ended, so that
// nothing of it outlives the account (CONTRACT §10): files it owns in the directories every user may
// write, its crontab, mail it queued through sendmail, and its SysV IPC objects and POSIX message
// queues (those go with suspension too). Found by the uid that owns them, not by a name the account chose, and removed
// without following a link.
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { makePrivateDirectory, readIfExists, removeFile } from '../files.ts';
import { removeOwnedBy } from '../home.ts';

/**
 * The directories every user may write on a Debian server, where an account's files may lie: its
 * PHP sees its own tmp in place of each (php/component.ts), and removal sweeps them all.
 */
export const SHARED_WRITABLE = ['/tmp', '/var/tmp', '/dev/shm', '/run/lock', '/var/lib/php/sessions'];
export const CRONTABS = '/var/spool/cron/crontabs';
/** Where sendmail leaves a message (owned by its sender's uid) for Postfix's pickup. */
export const MAILDROP = '/var/spool/postfix/maildrop';

const POSTQUEUE = '/usr/sbin/postqueue';

/**
 * Pickup writes the first Received header of every message sendmail gave it, naming the uid that
 * owned the maildrop file: `Received: by <host> (Postfix, from userid <uid>)`. What the sender
 * wrote comes after it, so only the first Received header is believed.
 */
export function submittedBy(headers: string): number | null {
  const first = /^Received:[^\n]*(?:\n[ \t][^\n]*)*/m.exec(headers)?.[0];
  const uid = first ? /\(Postfix, from userid (\d+)\)/.exec(first)?.[1] : undefined;
  return uid === undefined ? null : Number(uid);
}

/** Removes the messages Postfix holds in its queue that this uid submitted with sendmail. */
async function removeQueuedMail(ctx: LinuxContext, uid: number): Promise<string[]> {
  const { runner } = ctx;
  const { stdout } = await runner.run([POSTQUEUE, '-j']);
  const ids: string[] = [];
  for (const line of stdout.split('\n')) {
    if (line.trim() === '') continue;
    const id = (JSON.parse(line) as { queue_id?: unknown }).queue_id;
    if (typeof id !== 'string' || !/^[0-9A-Za-z]+$/.test(id)) continue;
    try {
      const headers = await runner.run(['/usr/sbin/postcat', '-h', '-q', '--', id]);
      if (submittedBy(headers.stdout) === uid) ids.push(id);
    } catch {
      // delivered or deleted meanwhile
    }
  }
  // postsuper reads the queue ids from standard input with `-d -`.
  if (ids.length > 0) await runner.run(['/usr/sbin/postsuper', '-d', '-'], { input: `${ids.join('\n')}\n` });
  return ids.map((id) => `mail queue ${id}`);
}

/** Each kind of SysV IPC object: its table in /proc/sysvipc, and ipcrm's option for one by id. */
const IPC_KINDS = [
  ['shm', '-m'],
  ['msg', '-q'],
  ['sem', '-s'],
] as const;

/**
 * The ids in a /proc/sysvipc table (its header names the columns; the id is the second) of the
 * objects this uid owns or made: the owner may hand an object to another uid, its creator stays.
 */
export function ipcIdsOf(table: string, uid: number): string[] {
  const [header = '', ...rows] = table.trim().split('\n');
  const columns = header.trim().split(/\s+/);
  const owner = columns.indexOf('uid');
  const creator = columns.indexOf('cuid');
  return rows
    .map((row) => row.trim().split(/\s+/))
    .filter((fields) => fields[owner] === String(uid) || fields[creator] === String(uid))
    .map((fields) => fields[1]!)
    .filter((id) => /^\d+$/.test(id));
}

/**
 * Removes the SysV IPC objects (shared memory, message queues, semaphore sets) of this system's
 * namespace that the uid owns or made: they outlive every process (a segment stays in memory) and
 * one of mode 0666 is any account's to use. Its PHP makes its own in a namespace of its own
 * (php/component.ts), gone with its master; these are its shell's and its cron jobs'.
 */
export async function removeIpcObjects(ctx: LinuxContext, uid: number): Promise<string[]> {
  // The tables are this machine's: below another system root there is none to look at.
  if (!ctx.live) return [];
  const removed: string[] = [];
  for (const [kind, option] of IPC_KINDS)
    for (const id of ipcIdsOf(readIfExists(`/proc/sysvipc/${kind}`) ?? '', uid))
      await ctx.runner.run(['/usr/bin/ipcrm', option, id]).then(
        () => removed.push(`${kind} ${id}`),
        () => {}, // removed meanwhile
      );
  return removed;
}

/**
 * Where Berth sees the system's POSIX message queues: an mqueue filesystem of its own mounting, in a
 * directory root's alone. A queue needs no mount to be made (`mq_open`), so a jail does not stop
 * it; it outlives its maker, one of mode 0666 is any account's, and the system holds 256 at most
 * (`fs.mqueue.queues_max`): one account's would leave every other without.
 */
export const MQUEUE_VIEW = '/run/berth/mqueue';

/** The mount of the view under way, which calls at the same time wait for rather than make again. */
let mountingQueues: Promise<void> | null = null;

const queuesMounted = () =>
  (readIfExists('/proc/self/mountinfo') ?? '')
    .split('\n')
    .some((line) => line.split(' ')[4] === MQUEUE_VIEW && line.includes(' - mqueue '));

async function messageQueues(ctx: LinuxContext): Promise<string | null> {
  // The queues are this machine's: below another system root there are none to look at.
  if (!ctx.live) return null;
  if (!queuesMounted()) {
    // Two suspensions at once both found it missing, and the second mount failed ("already
    // mounted"): the first call mounts, the others wait for it.
    mountingQueues ??= (async () => {
      makePrivateDirectory(MQUEUE_VIEW);
      await ctx.runner.run([
        '/usr/bin/mount',
        '-t',
        'mqueue',
        '-o',
        'nosuid,nodev,noexec',
        'mqueue',
        MQUEUE_VIEW,
      ]);
    })().finally(() => {
      mountingQueues = null;
    });
    await mountingQueues;
  }
  return MQUEUE_VIEW;
}

/** Removes the POSIX message queues the uid owns (its PHP's are in a namespace of its own). */
export async function removeMessageQueues(ctx: LinuxContext, uid: number): Promise<string[]> {
  const view = await messageQueues(ctx);
  // Looked at first, here: an mqueue filesystem holds queues alone, no directory and no link, and
  // most accounts have none. A removal's thread costs about 30 ms to start (every suspension).
  if (view === null || !ownsAny(view, uid)) return [];
  return (await removeOwnedBy(view, uid)).map((path) => `message queue ${path}`);
}

function ownsAny(dir: string, uid: number): boolean {
  return readdirSync(dir).some((name) => {
    try {
      return lstatSync(join(dir, name)).uid === uid;
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** Removes what the account of this name and uid left outside its home; returns what went. */
export async function removeLeftovers(ctx: LinuxContext, user: string, uid: number): Promise<string[]> {
  const removed: string[] = [];
  for (const dir of SHARED_WRITABLE) removed.push(...(await removeOwnedBy(ctx.path(dir), uid)));
  const crontab = ctx.path(join(CRONTABS, user));
  if (existsSync(crontab)) {
    removeFile(crontab);
    removed.push(join(CRONTABS, user));
  }
  removed.push(...(await removeOwnedBy(ctx.path(MAILDROP), uid)));
  // Postfix's queue is this machine's: below another system root there is none to look at.
  if (ctx.live && existsSync(POSTQUEUE)) removed.push(...(await removeQueuedMail(ctx, uid)));
  return removed;
}
