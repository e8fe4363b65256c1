// Berth's side of the PHP activator (activator.pl): the process that holds every account's PHP
// socket while no master of the account runs, and tells Berth when a request waits on one. Started
// at the first use, detached (it outlives Berth, and so do the sockets it holds); found again by
// its control socket, in a directory root's alone, by the next Berth.
import { existsSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { makePrivateDirectory } from '../files.ts';
import type { CommandRunner } from '../run.ts';

const PROGRAM = fileURLToPath(new URL('./activator.pl', import.meta.url));
const PERL = '/usr/bin/perl';
const SYSTEMD_RUN = '/usr/bin/systemd-run';
/** How long an answer may take: an activator that does not answer fails the call that asked. */
const ANSWER_MS = 30_000;

/**
 * Under systemd the activator is a unit of its own (`berth-php-activator`): started from Berth's
 * unit, it would be in that unit's control group and end with every restart of Berth, closing every
 * idle site's socket. Elsewhere (berth sandbox, a server without systemd) it is started detached.
 */
function underSystemd(): boolean {
  try {
    return readFileSync('/proc/1/comm', 'utf8').trim() === 'systemd' && existsSync(SYSTEMD_RUN);
  } catch {
    return false;
  }
}

export interface HeldSocket {
  path: string;
  /** The master it started on this socket, while it runs. */
  pid: number | null;
  /** Whether a request waits on it for a master Berth has not started yet. */
  waiting: boolean;
  /** Whether its path is still the socket (no one removed or replaced it). */
  present: boolean;
}

export interface ActivatorEvents {
  /** A request waits on `key`'s socket and no master of it runs. */
  ready(key: string): void;
  /** The master started on `key`'s socket ended: the socket is watched again. */
  exited(key: string, pid: number): void;
}

export interface Activator {
  /** Binds `path` (mode 0600, `uid`'s) and holds it for `key`; held already, nothing changes. */
  hold(key: string, path: string, uid: number, gid: number): Promise<void>;
  /** Closes `key`'s socket and removes its path (a master running on it keeps its own). */
  release(key: string): Promise<void>;
  /**
   * Starts `argv` with `key`'s socket as descriptor 3, named to PHP-FPM as `listen` (FPM_SOCKETS):
   * the master's pid. The socket is not watched while the master runs.
   */
  exec(
    key: string,
    argv: readonly string[],
    env: Readonly<Record<string, string>>,
    listen: string,
  ): Promise<number>;
  /** Refuses every request waiting on `key`'s socket (its master could not start), then watches it. */
  drain(key: string): Promise<void>;
  /** Sends `key`'s master, the activator's own child, SIGQUIT: it ends once its workers are idle. */
  stop(key: string): Promise<void>;
  list(): Promise<Record<string, HeldSocket>>;
  /** How many sockets it holds, the keys whose path is no longer their socket, those waiting for a master. */
  check(): Promise<{ held: number; absent: string[]; waiting: string[] }>;
  /** Tells `events` of requests and of masters ending, from now on (and of requests already waiting). */
  listen(events: ActivatorEvents): Promise<void>;
  close(): void;
}

interface Message {
  id?: number;
  error?: string;
  event?: 'ready' | 'exited';
  key?: string;
  pid?: number;
  held?: Record<string, HeldSocket> | number;
  absent?: string[];
  waiting?: string[];
}

/** The activator whose control socket is `<dir>/control.sock`, started when none answers there. */
export function activator(dir: string, runner: CommandRunner): Activator {
  const control = join(dir, 'control.sock');
  let connection: Promise<Socket> | null = null;
  let listener: ActivatorEvents | null = null;
  let next = 0;
  /** The socket of the connection now: a late end of an earlier one fails nothing sent on this. */
  let current: Socket | null = null;
  const pending = new Map<number, { resolve(m: Message): void; reject(e: Error): void }>();

  const attempt = () =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(control);
      socket.once('connect', () => resolve(socket));
      socket.once('error', reject);
    });

  const open = async (): Promise<Socket> => {
    let socket = await attempt().catch(() => null);
    if (!socket) {
      if (!runner.start) throw new Error('this command runner starts no detached process');
      makePrivateDirectory(dir);
      const env = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };
      const program = [PERL, PROGRAM, control];
      const systemd = underSystemd();
      const started = systemd
        ? await runner.start(
            [
              SYSTEMD_RUN,
              '--unit=berth-php-activator',
              '--collect',
              '--quiet',
              '--service-type=exec',
              ...program,
            ],
            env,
          )
        : await runner.start(program, env);
      // systemd-run ends once the unit has started: the activator is then the unit's.
      const ended = () => started.exited() && !systemd;
      const deadline = Date.now() + ANSWER_MS;
      for (let delay = 2; !socket; delay = Math.min(delay * 2, 20)) {
        if (ended() || Date.now() > deadline) throw new Error("Berth's PHP activator did not start");
        if (existsSync(control)) socket = await attempt().catch(() => null);
        if (!socket) await sleep(delay);
      }
    }
    socket.setEncoding('utf8');
    socket.unref();
    let buffer = '';
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
        const message = JSON.parse(buffer.slice(0, end)) as Message;
        buffer = buffer.slice(end + 1);
        if (message.event === 'ready' && message.key) listener?.ready(message.key);
        else if (message.event === 'exited' && message.key) listener?.exited(message.key, message.pid ?? 0);
        else if (message.id !== undefined) {
          const waiting = pending.get(message.id);
          pending.delete(message.id);
          if (pending.size === 0) socket.unref();
          if (message.error !== undefined) waiting?.reject(new Error(`PHP activator: ${message.error}`));
          else waiting?.resolve(message);
        }
      }
    });
    const lost = () => {
      if (current !== socket) return;
      current = null;
      connection = null;
      for (const [, waiting] of pending) waiting.reject(new Error("Berth's PHP activator went away"));
      pending.clear();
      // Told of requests again at once (the activator started anew if it ended).
      if (listener) setTimeout(() => void request('check').catch(() => {}), 1_000).unref();
    };
    current = socket;
    socket.on('close', lost);
    socket.on('error', lost);
    // Connected again (the activator, or Berth's connection, ended meanwhile): still told.
    if (listener) socket.write(`${JSON.stringify({ id: ++next, op: 'listen' })}\n`);
    return socket;
  };

  const request = async (op: string, fields: Record<string, unknown> = {}): Promise<Message> => {
    connection ??= open().catch((error: unknown) => {
      connection = null;
      throw error;
    });
    const socket = await connection;
    const id = ++next;
    const answered = new Promise<Message>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`Berth's PHP activator did not answer ${op} in ${ANSWER_MS / 1000} s`));
      }, ANSWER_MS);
      timer.unref();
      pending.set(id, {
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      });
    });
    socket.ref();
    socket.write(`${JSON.stringify({ id, op, ...fields })}\n`);
    return answered;
  };

  return {
    async hold(key, path, uid, gid) {
      await request('hold', { key, path, uid, gid });
    },
    async release(key) {
      await request('release', { key });
    },
    async exec(key, argv, env, listen) {
      const { pid } = await request('exec', { key, argv, env, listen });
      if (!pid) throw new Error(`PHP activator started no master for ${key}`);
      return pid;
    },
    async drain(key) {
      await request('drain', { key });
    },
    async list() {
      const { held } = await request('list');
      return typeof held === 'object' ? held : {};
    },
    async stop(key) {
      await request('stop', { key });
    },
    async check() {
      const { held, absent, waiting } = await request('check');
      return { held: typeof held === 'number' ? held : 0, absent: absent ?? [], waiting: waiting ?? [] };
    },
    async listen(events) {
      listener = events;
      await request('listen');
    },
    close() {
      void connection?.then((socket) => socket.destroy()).catch(() => {});
      connection = null;
    },
  };
}
