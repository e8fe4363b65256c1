// How commands print: listings as aligned tables or as JSON, stored text made safe for a terminal.

import type { Flags, Io } from './command.ts';

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A listing: `json` as indented JSON under --json, else a table of `header` and `rows`. */
export function printListing(io: Io, flags: Flags, json: unknown, header: string[], rows: string[][]): void {
  io.out(flags.json ? `${JSON.stringify(json, null, 2)}\n` : `${table([header, ...rows])}\n`);
}

/**
 * Text as a terminal may show it: control characters (escape sequences, newlines) written as
 * \xNN, so that no stored value, whatever wrote it, can move the cursor or forge a row.
 */
export function printable(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

export const JSON_OPTION = { type: 'boolean', help: 'prints JSON instead of a table' } as const;
