// Numbered migrations, written once for every dialect and run at start.
import type { Kysely } from 'kysely';
import { type Migration, Migrator } from 'kysely/migration';
import * as initial from './0001-initial.ts';
import * as portalSessions from './0002-portal-sessions.ts';
import * as idempotency from './0003-idempotency.ts';
import * as events from './0004-events.ts';
import * as identities from './0005-identities.ts';
import * as auditTarget from './0006-audit-target.ts';
import * as servers from './0007-servers.ts';
import * as fleetCalls from './0008-fleet-calls.ts';
import * as pendingChanges from './0009-pending-changes.ts';
import * as uids from './0010-uids.ts';
import * as principals from './0011-principals.ts';
import * as domains from './0012-domains.ts';
import * as holderCredentials from './0013-holder-credentials.ts';
import * as ssoTokens from './0014-sso-tokens.ts';
import * as holderSessions from './0015-holder-sessions.ts';
import * as mailboxes from './0016-mailboxes.ts';
import * as cronJobs from './0017-cron-jobs.ts';
import * as domainMail from './0018-domain-mail.ts';
import * as databases from './0019-databases.ts';
import * as ftpAccounts from './0020-ftp-accounts.ts';
import * as mailingLists from './0021-mailing-lists.ts';
import * as backupJobs from './0022-backup-jobs.ts';
import * as backupHolders from './0023-backup-holders.ts';
import * as domainsReversed from './0024-domains-reversed.ts';

export type DialectName = 'sqlite' | 'postgres';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
type Up = (db: Kysely<any>, dialect: DialectName) => Promise<void>;

const MIGRATIONS: Record<string, { up: Up }> = {
  '0001-initial': initial,
  '0002-portal-sessions': portalSessions,
  '0003-idempotency': idempotency,
  '0004-events': events,
  '0005-identities': identities,
  '0006-audit-target': auditTarget,
  '0007-servers': servers,
  '0008-fleet-calls': fleetCalls,
  '0009-pending-changes': pendingChanges,
  '0010-uids': uids,
  '0011-principals': principals,
  '0012-domains': domains,
  '0013-holder-credentials': holderCredentials,
  '0014-sso-tokens': ssoTokens,
  '0015-holder-sessions': holderSessions,
  '0016-mailboxes': mailboxes,
  '0017-cron-jobs': cronJobs,
  '0018-domain-mail': domainMail,
  '0019-databases': databases,
  '0020-ftp-accounts': ftpAccounts,
  '0021-mailing-lists': mailingLists,
  '0022-backup-jobs': backupJobs,
  '0023-backup-holders': backupHolders,
  '0024-domains-reversed': domainsReversed,
};

// biome-ignore lint/suspicious/noExplicitAny: see above.
export async function migrate(db: Kysely<any>, dialect: DialectName): Promise<void> {
  const migrations: Record<string, Migration> = {};
  for (const [name, migration] of Object.entries(MIGRATIONS)) {
    migrations[name] = { up: (handle) => migration.up(handle, dialect) };
  }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error || failed) {
    throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${String(error)}`, {
      cause: error,
    });
  }
}
