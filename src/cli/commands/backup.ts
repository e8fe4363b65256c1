import { queueAccountBackup, runBackupJob } from '../../operations/backup-jobs.ts';
import { ownAccounts } from '../../operations/maintenance.ts';
import { findAccount } from '../../store/accounts.ts';
import { backupStatuses, findJob } from '../../store/backup-jobs.ts';
import { type Command, UsageError } from '../command.ts';
import { SERVER_OPTIONS, withServices } from '../configuration.ts';
import { positional } from '../input.ts';
import { JSON_OPTION, printable, printListing } from '../output.ts';
import { runAsAdministrator } from './package.ts';

const ACTIONS = ['run', 'list', 'restore', 'status'];

/** Backups (CONTRACT §15): made now, listed, restored, and where each account stands. */
export const backupCommand: Command = {
  name: 'backup',
  summary: "backs accounts up now, lists and restores their snapshots, shows each account's last backup",
  usage: [
    'backup run [USER]',
    'backup list USER [--json]',
    'backup restore USER [--snapshot ID] [--what all|files|mail|databases] [--path P]',
    'backup status [--json]',
  ],
  options: {
    snapshot: { type: 'string', value: 'ID', help: 'the snapshot to restore (default: the newest)' },
    what: { type: 'string', value: 'W', help: 'what to restore: all (default), files, mail or databases' },
    path: { type: 'string', value: 'P', help: 'one path below the home to restore' },
    json: JSON_OPTION,
    'system-root': SERVER_OPTIONS['system-root'],
  },
  configured: true,
  async run(args, flags, io) {
    const action = positional(args, 0, `backup command (${ACTIONS.join(', ')})`);
    if (!ACTIONS.includes(action)) throw new UsageError(`unknown backup command ${action}`);
    return withServices(flags, async (services) => {
      if (action === 'run') {
        // The jobs the API's backupacct would queue, run here and now, one after the other.
        const user = args[1];
        const accounts = user ? [await findAccount(services.store.db, user)] : await ownAccounts(services);
        if (accounts.some((a) => a === undefined)) throw new UsageError(`no account named ${user}`);
        let failed = 0;
        for (const account of accounts) {
          const job = await queueAccountBackup(services, account!, 'call');
          await runBackupJob(services, job);
          const done = await findJob(services.store.db, job.id);
          if (done?.state === 'done') io.out(`${account!.user}: snapshot ${done.snapshot!.slice(0, 8)}\n`);
          else {
            failed++;
            io.out(
              `${account!.user}: failed: ${printable(done?.error ?? 'unknown')} (retried while serving)\n`,
            );
          }
        }
        return failed === 0 ? 0 : 1;
      }
      if (action === 'status') {
        const statuses = await backupStatuses(services.store.db);
        const rows = (await ownAccounts(services)).map((account) => {
          const status = statuses.get(account.user);
          return {
            user: account.user,
            last_success: status?.lastSuccess?.toISOString() ?? null,
            snapshot: status?.lastSnapshot ?? null,
            failures: status?.failuresSince ?? 0,
            last_error: status?.lastError ?? null,
            active: status?.active ?? null,
          };
        });
        printListing(
          io,
          flags,
          rows,
          ['USER', 'LAST BACKUP', 'SNAPSHOT', 'FAILURES', 'NOW', 'LAST ERROR'],
          rows.map((r) => [
            r.user,
            r.last_success?.slice(0, 16).replace('T', ' ') ?? 'never',
            r.snapshot?.slice(0, 8) ?? '-',
            String(r.failures),
            r.active ?? '-',
            printable(r.last_error ?? '-'),
          ]),
        );
        return 0;
      }
      const user = positional(args, 1, 'user name');
      const listed = (await runAsAdministrator(services, 'listbackups', { user })).data as {
        snapshots: { id: string; time: string; size: number; server: string }[];
      };
      if (action === 'list') {
        printListing(
          io,
          flags,
          listed,
          ['ID', 'TIME', 'SIZE (MB)', 'SERVER'],
          listed.snapshots.map((s) => [
            s.id.slice(0, 8),
            s.time.slice(0, 19).replace('T', ' '),
            String(s.size),
            s.server,
          ]),
        );
        return 0;
      }
      const snapshot = typeof flags.snapshot === 'string' ? flags.snapshot : listed.snapshots.at(-1)?.id;
      if (!snapshot) throw new UsageError(`${user} has no backup to restore`);
      const params: Record<string, string> = { user, snapshot };
      if (typeof flags.what === 'string') params.what = flags.what;
      if (typeof flags.path === 'string') params.path = flags.path;
      io.out(`${(await runAsAdministrator(services, 'restoreacct', params)).info}\n`);
      return 0;
    });
  },
};
