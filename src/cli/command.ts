// What every `berth` command exports: one file per command under commands/, listed in main.ts.

import type { ParseArgsOptionDescriptor } from 'node:util';

/** A mistake in the command line itself: `berth` answers it with the usage and status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** One option: how node:util's parseArgs reads it, and how --help shows it. */
export interface Option {
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
  readonly short?: string;
  /** The value's name in --help, for a string option: `--limit N`. */
  readonly value?: string;
  readonly help: string;
}

export type Options = Readonly<Record<string, Option>>;

export type Flags = Record<string, string | boolean | string[] | undefined>;

/** Where a command reads its input and writes its results; its diagnostics go to stderr. */
export interface Io {
  stdin: () => Promise<string>;
  out: (text: string) => void;
}

export interface Command {
  /** The word after `berth`. */
  readonly name: string;
  /** One line for `berth --help`. */
  readonly summary: string;
  /** Its forms, each as typed after `berth `. */
  readonly usage: readonly string[];
  /** Its own options, besides the common ones. */
  readonly options: Options;
  /**
   * It works as the configured server would, so it also takes serve's options (--driver,
   * --system-root, --node, …) that override berth.toml.
   */
  readonly configured: boolean;
  /** Left out of `berth --help`: a command Berth starts itself. */
  readonly hidden?: boolean;
  /** Runs it with the words after its name; returns the exit status. */
  run(args: string[], flags: Flags, io: Io): Promise<number>;
}

/** Options every command takes. */
export const COMMON_OPTIONS = {
  'data-dir': {
    type: 'string',
    value: 'DIR',
    help: 'the data directory (default $BERTH_DATA_DIR, else ./data)',
  },
  database: {
    type: 'string',
    value: 'postgres://…',
    help: 'a PostgreSQL store shared by a fleet, instead of DIR/berth.db',
  },
  help: { type: 'boolean', short: 'h', help: 'prints this help and does nothing else' },
} as const satisfies Options;

/** Options as node:util's parseArgs takes them. */
export function parseArgsOptions(options: Options): Record<string, ParseArgsOptionDescriptor> {
  return Object.fromEntries(
    Object.entries(options).map(([name, { type, multiple, short }]) => [
      name,
      { type, ...(multiple && { multiple }), ...(short !== undefined && { short }) },
    ]),
  );
}
