import { listAudit, principalText } from '../../store/audit.ts';
import { logCommand } from '../log-command.ts';
import { printable } from '../output.ts';

export const auditCommand = logCommand({
  name: 'audit',
  summary: 'the audit log, newest first: who called what, from where, with what result',
  async list(services, limit) {
    const entries = await listAudit(services.store.db, { limit });
    return {
      json: entries,
      header: ['TIME', 'API USER', 'PRINCIPAL', 'RESELLER', 'ADDRESS', 'OPERATION', 'TARGET', 'STATUS'],
      rows: entries.map((e) => {
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
    };
  },
});
