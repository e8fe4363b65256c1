// What a command reads from its command line and standard input.

import { type Flags, type Io, UsageError } from './command.ts';

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export const PASSWORD_STDIN_OPTION = {
  type: 'boolean',
  help: 'reads the password from standard input (its first line)',
} as const;

/** A password never comes on the command line, where ps and the shell's history would show it. */
export async function passwordFromStdin(flags: Flags, io: Io): Promise<string> {
  if (!flags['password-stdin'])
    throw new UsageError('give the password on standard input with --password-stdin');
  const text = await io.stdin();
  return text.replace(/\r?\n$/, '');
}

/** The word at `index` after the command's name. */
export function positional(args: string[], index: number, what: string): string {
  const value = args[index];
  if (value === undefined) throw new UsageError(`missing ${what}`);
  return value;
}

export const LIMIT_OPTION = { type: 'string', value: 'N', help: 'the newest N (default 50)' } as const;

/** --limit N, 50 when not given. */
export function limitFlag(flags: Flags): number {
  const text = (flags.limit as string | undefined) ?? '50';
  if (!/^[0-9]{1,6}$/.test(text) || Number(text) < 1) throw new UsageError('--limit is a number from 1');
  return Number(text);
}
