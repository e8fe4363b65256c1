// The one way Berth runs a system command: an absolute path and an argument array, never a shell.
import { execFile, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';

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
}

export class CommandFailed extends Error {
  override name = 'CommandFailed';
}

export function execRunner(): CommandRunner {
  return {
    run(argv, options = {}) {
      const [binary, ...args] = argv;
      if (!binary?.startsWith('/')) throw new CommandFailed(`not an absolute command path: ${binary}`);
      return new Promise((resolve, reject) => {
        // A child takes the umask the process has when it is started, which is at once.
        const previous = options.umask === undefined ? null : process.umask(options.umask);
        let child: ReturnType<typeof execFile>;
        try {
          child = execFile(
            binary,
            args,
            {
              shell: false,
              timeout: options.timeoutMs ?? 60_000,
              maxBuffer: 4 * 1024 * 1024,
              env: { ...options.env, PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
            },
            (error, stdout, stderr) => {
              if (error) {
                const detail = String(stderr).trim().split('\n').slice(-3).join(' / ');
                reject(new CommandFailed(`${binary} failed: ${detail || error.message}`));
              } else resolve({ stdout: String(stdout), stderr: String(stderr) });
            },
          );
        } finally {
          if (previous !== null) process.umask(previous);
        }
        child.stdin?.on('error', () => {}); // a command that does not read its input may close it first
        child.stdin?.end(options.input ?? '');
      });
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
