// The one way Berth runs a system command: an absolute path and an argument array, never a shell.
import { execFile, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface CommandRunner {
  /**
   * `umask` is the command's own, for a tool that makes system files readable by others (a jail
   * built by jailkit) while Berth itself runs under UMask=0077.
   */
  run(
    argv: readonly string[],
    options?: { input?: string; umask?: number },
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
              timeout: 60_000,
              maxBuffer: 4 * 1024 * 1024,
              env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
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
 * server): `output` is its standard output; `done` settles when it ends, rejecting with the end of
 * what it wrote to standard error when it fails.
 */
export function streamCommand(
  argv: readonly string[],
  input?: Readable,
): { output: Readable; done: Promise<void> } {
  const [binary, ...args] = argv;
  if (!binary?.startsWith('/')) throw new CommandFailed(`not an absolute command path: ${binary}`);
  const child = spawn(binary, args, {
    shell: false,
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
    stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  let inputFailed: string | null = null;
  if (input)
    pipeline(input, child.stdin!).catch((error: unknown) => {
      // A failed input ends the command: what it was given is not whole.
      inputFailed = `its input failed: ${(error as Error).message}`;
      child.kill('SIGKILL');
    });
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', (error) => reject(new CommandFailed(`${binary} failed: ${error.message}`)));
    child.on('close', (code, signal) => {
      if (code === 0 && !inputFailed) return resolve();
      const detail = [stderr.trim().split('\n').slice(-3).join(' / '), inputFailed]
        .filter(Boolean)
        .join(' / ');
      reject(new CommandFailed(`${binary} failed: ${detail || `exit ${code ?? signal}`}`));
    });
  });
  return { output: child.stdout!, done };
}
