// The one way Berth runs a system command: an absolute path and an argument array, never a shell.
import { execFile } from 'node:child_process';

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
