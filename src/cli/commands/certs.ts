import { ownAccounts } from '../../operations/maintenance.ts';
import { objectsByUser } from '../../store/objects.ts';
import type { Command } from '../command.ts';
import { SERVER_OPTIONS, withServices } from '../configuration.ts';
import { JSON_OPTION, printable, printListing } from '../output.ts';

/** Each domain's certificate, every domain of every account: where it stands, who issued it, when it expires or is tried again. */
export const certsCommand: Command = {
  name: 'certs',
  summary: "each domain's certificate: state, issuer, expiry, next attempt, last error",
  usage: ['certs [--json] [--system-root DIR]'],
  options: { json: JSON_OPTION, 'system-root': SERVER_OPTIONS['system-root'] },
  configured: true,
  run: (_args, flags, io) =>
    withServices(flags, async (services) => {
      const objects = await objectsByUser(services.store.db);
      const rows = services.driver.certificates?.(await ownAccounts(services), objects) ?? [];
      const date = (iso?: string) => (iso ? iso.slice(0, 16).replace('T', ' ') : '-');
      printListing(
        io,
        flags,
        rows,
        ['USER', 'DOMAIN', 'STATE', 'ISSUER', 'EXPIRES', 'NEXT', 'LAST ERROR'],
        rows.map((row) => [
          row.user,
          row.domain,
          row.state ?? 'none',
          row.issuer ?? '-',
          date(row.notAfter),
          date(row.nextAttempt),
          printable(row.lastError ?? '-'),
        ]),
      );
      return 0;
    }),
};
