// How the sandbox acts on the system it sets up: a tool run by its absolute path (an argv array,
// never a shell), and a file written with its mode.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Runs a tool and answers what it printed on standard output. */
export const run = (argv: string[]): string =>
  execFileSync(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });

/** Writes a file, making its directory first. */
export function write(path: string, content: string, mode = 0o644): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, content, { mode });
}
