// A command that prints the newest entries of one of Berth's logs (the audit log, the delivery
// log): `--limit N` of them, as a table or, with --json, as JSON.
import type { Services } from '../services.ts';
import type { Command } from './command.ts';
import { withServices } from './configuration.ts';
import { LIMIT_OPTION, limitFlag } from './input.ts';
import { JSON_OPTION, printListing } from './output.ts';

/** A log's newest entries: as --json prints them, and as the table's heading and rows. */
export interface LogListing {
  json: unknown;
  header: string[];
  rows: string[][];
}

export function logCommand(spec: {
  name: string;
  summary: string;
  list(services: Services, limit: number): Promise<LogListing>;
}): Command {
  return {
    name: spec.name,
    summary: spec.summary,
    usage: [`${spec.name} [--limit N] [--json]`],
    options: { limit: LIMIT_OPTION, json: JSON_OPTION },
    configured: true,
    async run(_args, flags, io) {
      const limit = limitFlag(flags);
      return withServices(flags, async (services) => {
        const { json, header, rows } = await spec.list(services, limit);
        printListing(io, flags, json, header, rows);
        return 0;
      });
    },
  };
}
