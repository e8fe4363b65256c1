import { listAudit, principalText } from '../../store/audit.ts';
import type { Command } from '../command.ts';
import { withServices } from '../configuration.ts';
import { LIMIT_OPTION, limitFlag } from '../input.ts';
import { JSON_OPTION, printable, printListing } from '../output.ts';

export const auditCommand: Command = {
  name: 'audit',
  summary: 'the audit log, newest first: who called what, from where, with what result',
  usage: ['audit [--limit N] [--json]'],
  options: { limit: LIMIT_OPTION, json: JSON_OPTION },
  configured: true,
  async run(_args, flags, io) {
    const limit = limitFlag(flags);
    return withServices(flags, async (services) => {
      const entries = await listAudit(services.store.db, { limit });
      printListing(
        io,
        flags,
        entries,
        ['TIME', 'API USER', 'PRINCIPAL', 'RESELLER', 'ADDRESS', 'OPERATION', 'TARGET', 'STATUS'],
        entries.map((e) => {
          const status = e.code ? `${e.status} ${e.code}` : String(e.status);
          return [
            e.at,
            e.api_user,
            principalText(e),
            e.reseller ?? '-',
            e.address,
            e.operation,
            e.target ?? '-',
            status,
          ].map(printable);
        }),
      );
      return 0;
    });
  },
};
