// @ts-check
// Starts Berth's system commands for it (run.ts): a small process of its own, fed one request a
// line on its standard input and answering each on its standard output. Starting a process forks
// the process that starts it, and a fork costs with its size: from Berth's server, hundreds of MB,
// it took about 5 ms of Berth's own thread a command (a third of that thread under 20 parallel
// createacct calls); from this process, a fraction of that, and none of Berth's thread. JavaScript,
// like the store's writer thread: a process that loads a .ts file starts a TypeScript stripper.
//
// A request: { id, argv, input?, umask?, timeoutMs?, env? }. An answer: { id, stdout, stderr } or
// { id, stdout, stderr, error, code } (the failure's message, and the exit status when it exited). A request with `detached` starts a
// process that outlives it (an account's PHP-FPM master): answered with { id, pid } at once, then
// { id, exited: true } when it ends. It ends with its input (Berth gone).
import { execFile, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

/** @typedef {{ id: number; argv: string[]; input?: string; umask?: number; timeoutMs?: number; env?: Record<string, string>; detached?: boolean }} Request */

const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });

/** @param {object} answer */
const answer = (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`);

lines.on('line', (line) => {
  /** @type {Request} */
  const request = JSON.parse(line);
  const [binary, ...args] = request.argv;
  if (request.detached) {
    try {
      const child = spawn(/** @type {string} */ (binary), args, {
        detached: true,
        stdio: 'ignore',
        env: request.env,
      });
      child.on('error', (error) => answer({ id: request.id, error: error.message, exited: true }));
      child.once('exit', () => answer({ id: request.id, exited: true }));
      if (child.pid !== undefined) answer({ id: request.id, pid: child.pid });
    } catch (error) {
      answer({ id: request.id, error: /** @type {Error} */ (error).message, exited: true });
    }
    return;
  }
  // A child takes the umask the process has when it is started, which is at once.
  const previous = request.umask === undefined ? null : process.umask(request.umask);
  try {
    const child = execFile(
      /** @type {string} */ (binary),
      args,
      {
        shell: false,
        timeout: request.timeoutMs ?? 60_000,
        maxBuffer: 4 * 1024 * 1024,
        env: { ...request.env, PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' },
      },
      (error, stdout, stderr) =>
        answer({
          id: request.id,
          stdout: String(stdout),
          stderr: String(stderr),
          ...(error
            ? { error: error.message, code: typeof error.code === 'number' ? error.code : null }
            : {}),
        }),
    );
    child.stdin?.on('error', () => {}); // a command that does not read its input may close it first
    child.stdin?.end(request.input ?? '');
  } catch (error) {
    answer({ id: request.id, stdout: '', stderr: '', error: /** @type {Error} */ (error).message });
  } finally {
    if (previous !== null) process.umask(previous);
  }
});
lines.on('close', () => process.exit(0));
