// The one way Berth runs a system command: an absolute path and an argument array, never a shell.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { PassThrough, type Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';

export interface CommandRunner {
  /**
   * `umask` is the command's own, for a tool that makes system files readable by others (a jail
   * built by jailkit) while Berth itself runs under UMask=0077. A command is ended after a minute
   * unless `timeoutMs` says otherwise.
   */
  run(
    argv: readonly string[],
    options?: { input?: string; umask?: number; timeoutMs?: number; env?: Readonly<Record<string, string>> },
  ): Promise<{ stdout: string; stderr: string }>;
  /**
   * Starts a process that outlives the call (detached, in a session of its own, its output
   * nowhere), with exactly `env`: its pid, and whether it has ended since.
   */
  start?(argv: readonly string[], env: Readonly<Record<string, string>>): Promise<StartedProcess>;
  /**
   * Runs a command whose output is handed on as it comes (a listing of the mail queue): `output` is
   * its standard output, `done` as `streamCommand`'s. The pieces are given as they are read,
   * without flow control: a reader that falls behind keeps them in memory. Ended after a minute
   * unless `timeoutMs` says otherwise.
   */
  stream(
    argv: readonly string[],
    options?: { timeoutMs?: number },
  ): { output: Readable; done: Promise<void> };
}

export interface StartedProcess {
  pid: number;
  exited(): boolean;
}

export class CommandFailed extends Error {
  override name = 'CommandFailed';
  /** The command's exit status, when it ran and exited with one. */
  exitCode: number | null = null;
}

/** An answer of the spawner (spawner.pl). */
interface Answer {
  id: number;
  stdout?: string;
  stderr?: string;
  error?: string;
  /** The exit status of a command that failed by exiting with it. */
  code?: number | null;
  /** A detached process's pid, then its end. */
  pid?: number;
  exited?: boolean;
  /** What a streamed command wrote to its standard output since the last answer. */
  output?: Buffer;
}

const SPAWNER = fileURLToPath(new URL('./spawner.pl', import.meta.url));

/** A field of a line to or from the spawner: `x` and the text's UTF-8 bytes in hex. */
const field = (text: string) => `x${Buffer.from(text).toString('hex')}`;
const unfield = (text: string) => Buffer.from(text.slice(1), 'hex').toString();

/** A request's line: its fields as spawner.pl reads them. */
function requestLine(id: number, request: Request): string {
  const { argv, env = {} } = request;
  const head =
    'detached' in request
      ? [String(id), 'start', '', '', '']
      : 'streamed' in request
        ? [String(id), 'stream', '', String(request.timeoutMs ?? 60_000), '']
        : [
            String(id),
            'run',
            request.umask === undefined ? '' : String(request.umask),
            String(request.timeoutMs ?? 60_000),
            request.input ?? '',
          ];
  return `${[...head, String(argv.length), ...argv, ...Object.entries(env).flat()].map(field).join(' ')}\n`;
}

/** An answer's line, as spawner.pl writes it. */
function parseAnswer(line: string): Answer {
  const fields = line.split(' ');
  // Output comes in pieces cut anywhere, a character's bytes too: it stays bytes.
  if (unfield(fields[1] ?? '') === 'output')
    return { id: Number(unfield(fields[0] ?? '')), output: Buffer.from((fields[2] ?? '').slice(1), 'hex') };
  const [id = '', kind, ...rest] = fields.map(unfield);
  const answer: Answer = { id: Number(id) };
  if (kind === 'started') answer.pid = Number(rest[0]);
  else if (kind === 'exited') Object.assign(answer, { exited: true }, rest[0] && { error: rest[0] });
  else {
    const [stdout = '', stderr = '', error, code] = rest;
    Object.assign(answer, { stdout, stderr });
    if (kind === 'failed') Object.assign(answer, { error, code: code ? Number(code) : null });
  }
  return answer;
}

/**
 * The command's path, once it is absolute and no argument or variable holds a NUL byte: exec(2)
 * would end a string there, running the command with less than it was given.
 */
function checked(argv: readonly string[], env: Readonly<Record<string, string>> = {}): string {
  const [binary] = argv;
  if (!binary?.startsWith('/')) throw new CommandFailed(`not an absolute command path: ${binary}`);
  if ([...argv, ...Object.entries(env).flat()].some((text) => text.includes('\0')))
    throw new CommandFailed(`${binary}: a NUL byte in an argument or the environment`);
  return binary;
}

type Request =
  | {
      argv: readonly string[];
      input?: string;
      umask?: number;
      timeoutMs?: number;
      env?: Readonly<Record<string, string>>;
    }
  | { argv: readonly string[]; env: Readonly<Record<string, string>>; detached: true }
  | { argv: readonly string[]; env?: undefined; timeoutMs?: number; streamed: true };

/** A command's failure, named with the end of what it wrote to standard error. */
function failure(binary: string, answer: Answer): CommandFailed {
  const detail = (answer.stderr ?? '').trim().split('\n').slice(-3).join(' / ');
  const failed = new CommandFailed(`${binary} failed: ${detail || answer.error}`);
  failed.exitCode = answer.code ?? null;
  return failed;
}

/**
 * Runs each command through the spawner, a small process of Berth's started at the first command
 * (spawner.pl: a fork from Berth's own process cost its thread about 5 ms a command). One that ends
 * fails the commands it was running, and the next command starts another.
 */
export function execRunner(): CommandRunner {
  let spawner: { child: ChildProcess; pending: Map<number, (answer: Answer) => void> } | null = null;
  let next = 0;
  /** What to do when a detached process the spawner started ends, by its request's id. */
  const ends = new Map<number, () => void>();
  /** Where a streamed command's output goes, by its request's id. */
  const outputs = new Map<number, PassThrough>();
  const start = () => {
    const child = spawn('/usr/bin/perl', [SPAWNER], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
    });
    const pending = new Map<number, (answer: Answer) => void>();
    const current = { child, pending };
    const lines = createInterface({ input: child.stdout!, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on('line', (line) => {
      const answer = parseAnswer(line);
      if (answer.output) {
        outputs.get(answer.id)?.write(answer.output);
        return;
      }
      if (answer.pid === undefined && answer.exited) {
        // A detached process ended (or never started: then its start waits for this answer).
        ends.get(answer.id)?.();
        ends.delete(answer.id);
        if (!pending.has(answer.id)) return;
      }
      pending.get(answer.id)?.(answer);
      pending.delete(answer.id);
      outputs.delete(answer.id);
      idle();
    });
    const ended = (why: string) => {
      if (spawner === current) spawner = null;
      for (const [id, settle] of pending) settle({ id, stdout: '', stderr: '', error: why });
      pending.clear();
      outputs.clear();
      // Its detached processes go on: their ends are no longer told.
      ends.clear();
    };
    child.on('error', (error) => ended(`Berth's spawner failed: ${error.message}`));
    child.on('exit', (code, signal) => ended(`Berth's spawner ended (${code ?? signal})`));
    child.stdin!.on('error', () => {});
    return current;
  };
  // The spawner keeps no one waiting: Berth (a CLI command, a test) may end while it is idle.
  const handles = (current: NonNullable<typeof spawner>) =>
    [current.child.stdin, current.child.stdout] as unknown as { ref(): void; unref(): void }[];
  const idle = () => {
    if (spawner && spawner.pending.size === 0) {
      spawner.child.unref();
      for (const handle of handles(spawner)) handle.unref();
    }
  };
  const send = (request: Request, settle: (answer: Answer) => void) => {
    spawner ??= start();
    const { child, pending } = spawner;
    child.ref();
    for (const handle of handles(spawner)) handle.ref();
    const id = ++next;
    pending.set(id, settle);
    child.stdin!.write(requestLine(id, request));
    return id;
  };
  return {
    run(argv, options = {}) {
      const { input, umask, timeoutMs, env } = options;
      const binary = checked(argv, env);
      return new Promise((resolve, reject) => {
        send({ argv, input, umask, timeoutMs, env }, (answer) => {
          const { stdout = '', stderr = '', error } = answer;
          if (error === undefined) return resolve({ stdout, stderr });
          reject(failure(binary, answer));
        });
      });
    },
    start(argv, env) {
      const binary = checked(argv, env);
      return new Promise((resolve, reject) => {
        const state = { exited: false };
        const id = send({ argv, env, detached: true }, ({ pid, error }) => {
          if (pid === undefined)
            return reject(new CommandFailed(`${binary} did not start: ${error ?? 'no pid'}`));
          resolve({ pid, exited: () => state.exited });
        });
        ends.set(id, () => {
          state.exited = true;
        });
      });
    },
    stream(argv, options = {}) {
      const binary = checked(argv);
      const output = new PassThrough();
      const done = new Promise<void>((resolve, reject) => {
        const id = send({ argv, timeoutMs: options.timeoutMs, streamed: true }, (answer) => {
          output.end();
          if (answer.error === undefined) resolve();
          else reject(failure(binary, answer));
        });
        outputs.set(id, output);
      });
      // Its failure is the caller's once it has read the output: not one no one waited for.
      done.catch(() => {});
      return { output, done };
    },
  };
}

/**
 * Runs a command whose input or output is a stream (an account's files on their way to another
 * server): `output` is its standard output; `done` settles when it has ended and so has its input,
 * rejecting with the end of what it wrote to standard error when it or its input fails.
 */
export function streamCommand(
  argv: readonly string[],
  input?: Readable,
  env: Readonly<Record<string, string>> = {},
): { output: Readable; done: Promise<void> } {
  const [binary, ...args] = argv;
  if (!binary?.startsWith('/')) throw new CommandFailed(`not an absolute command path: ${binary}`);
  const child = spawn(binary, args, {
    shell: false,
    env: { ...env, PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
    stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  let inputFailed: string | null = null;
  // The input is whole only once it has ended: a command that exits 0 on what came before a
  // sender's failure (tar at the end of an archive cut short) has not been given it all. What the
  // command leaves unread is drained, to see how the input ends.
  let fed: Promise<void> = Promise.resolve();
  if (input) {
    input.pipe(child.stdin!);
    child.stdin!.on('error', () => {}); // a command may stop reading first (tar after an archive's end)
    // Unpiped first: a write to the closed pipe after the resume would pause the input again.
    child.on('close', () => {
      input.unpipe(child.stdin!);
      input.resume();
    });
    fed = finished(input).catch((error: unknown) => {
      inputFailed = `its input failed: ${(error as Error).message}`;
      child.kill('SIGKILL');
    });
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', (error) => reject(new CommandFailed(`${binary} failed: ${error.message}`)));
    child.on('close', (code, signal) => resolve({ code, signal }));
  });
  const done = Promise.all([exited, fed]).then(([{ code, signal }]) => {
    if (code === 0 && !inputFailed) return;
    const detail = [stderr.trim().split('\n').slice(-3).join(' / '), inputFailed].filter(Boolean).join(' / ');
    throw new CommandFailed(`${binary} failed: ${detail || `exit ${code ?? signal}`}`);
  });
  return { output: child.stdout!, done };
}
