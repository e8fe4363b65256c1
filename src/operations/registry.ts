// The operations of each audience, by the name in their path: one grep away from each file. A
// registry is a value the surfaces are given (the admin and reseller listeners, the OpenAPI
// document, the docs and the portal take apiOperations; the customer listener will take
// customerOperations), never a table they reach for.
import { accountInfo } from './account-info.ts';
import { accountSummary } from './account-summary.ts';
import { addCronJob } from './add-cron-job.ts';
import { addDatabase } from './add-database.ts';
import { addDatabaseUser } from './add-database-user.ts';
import { addDomain } from './add-domain.ts';
import { addForwarder } from './add-forwarder.ts';
import { addFtpAccount } from './add-ftp-account.ts';
import { addListMember } from './add-list-member.ts';
import { addMailbox } from './add-mailbox.ts';
import { addMailingList } from './add-mailing-list.ts';
import { addPackage } from './add-package.ts';
import { addToken } from './add-token.ts';
import { backupAccount } from './backup-account.ts';
import { changeContactEmail } from './change-contact-email.ts';
import { changeDatabasePassword } from './change-database-password.ts';
import { changeFtpPassword } from './change-ftp-password.ts';
import { changeMailboxPassword } from './change-mailbox-password.ts';
import { changeMailboxQuota } from './change-mailbox-quota.ts';
import { changePackage } from './change-package.ts';
import { changePassword } from './change-password.ts';
import { createAccount } from './create-account.ts';
import { createUserSession } from './create-user-session.ts';
import { credentialCheck } from './credential-check.ts';
import { editPackage } from './edit-package.ts';
import { editQuota } from './edit-quota.ts';
import { grantDatabase, revokeDatabase } from './grant-database.ts';
import { killPackage } from './kill-package.ts';
import { listAccounts } from './list-accounts.ts';
import { listBackups } from './list-backups.ts';
import { listBackupsOfHolder } from './list-backups-holder.ts';
import { listCronJobs } from './list-cron-jobs.ts';
import { listDatabases } from './list-databases.ts';
import { listDomains } from './list-domains.ts';
import { listForwarders } from './list-forwarders.ts';
import { listFtpAccounts } from './list-ftp-accounts.ts';
import { listMailboxes } from './list-mailboxes.ts';
import { listMailingLists } from './list-mailing-lists.ts';
import { listPackages } from './list-packages.ts';
import { listSuspended } from './list-suspended.ts';
import { listTokens } from './list-tokens.ts';
import { loadAverage } from './load-average.ts';
import type { Operation, ParamSchema } from './operation.ts';
import { passwd } from './passwd.ts';
import { removeAccount } from './remove-account.ts';
import { removeCronJob } from './remove-cron-job.ts';
import { removeDatabase } from './remove-database.ts';
import { removeDatabaseUser } from './remove-database-user.ts';
import { removeDomain } from './remove-domain.ts';
import { removeForwarder } from './remove-forwarder.ts';
import { removeFtpAccount } from './remove-ftp-account.ts';
import { removeListMember } from './remove-list-member.ts';
import { removeMailbox } from './remove-mailbox.ts';
import { removeMailingList } from './remove-mailing-list.ts';
import { removeToken } from './remove-token.ts';
import { resellerCount } from './reseller-count.ts';
import { restoreAccount } from './restore-account.ts';
import { restoreBackup } from './restore-backup.ts';
import { setupReseller } from './setup-reseller.ts';
import { suspendAccount } from './suspend-account.ts';
import { terminateReseller } from './terminate-reseller.ts';
import { testConnection } from './test-connection.ts';
import { unsuspendAccount } from './unsuspend-account.ts';
import { usageStatistics } from './usage-statistics.ts';
import { usersCount } from './users-count.ts';
import { versionOperation } from './version.ts';

/** A set of operations served together, by name. */
export interface Registry {
  readonly operations: ReadonlyMap<string, Operation<ParamSchema>>;
  find(name: string): Operation<ParamSchema> | undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: each operation has its own schema; callers parse with it.
export function registryOf(list: readonly Operation<any>[]): Registry {
  const operations: ReadonlyMap<string, Operation<ParamSchema>> = new Map(list.map((op) => [op.name, op]));
  return { operations, find: (name) => operations.get(name) };
}

/** The administrator's and resellers' API (CONTRACT §6), on the admin and reseller listeners. */
export const apiOperations = registryOf([
  credentialCheck,
  testConnection,
  loadAverage,
  versionOperation,
  createAccount,
  passwd,
  setupReseller,
  terminateReseller,
  usersCount,
  resellerCount,
  listSuspended,
  accountSummary,
  listAccounts,
  listPackages,
  usageStatistics,
  changeContactEmail,
  suspendAccount,
  unsuspendAccount,
  editQuota,
  changePackage,
  removeAccount,
  createUserSession,
  addPackage,
  editPackage,
  killPackage,
  backupAccount,
  listBackups,
  restoreAccount,
]);

/**
 * The account holder's side (CONTRACT §14): the customer API's operations, which the
 * administrator and resellers call for a holder at /api/account/<op>/.
 */
export const customerOperations = registryOf([
  accountInfo,
  changePassword,
  listTokens,
  addToken,
  removeToken,
  listDomains,
  addDomain,
  removeDomain,
  listMailboxes,
  addMailbox,
  changeMailboxPassword,
  changeMailboxQuota,
  removeMailbox,
  listForwarders,
  addForwarder,
  removeForwarder,
  listMailingLists,
  addMailingList,
  removeMailingList,
  addListMember,
  removeListMember,
  listCronJobs,
  addCronJob,
  removeCronJob,
  listDatabases,
  addDatabase,
  removeDatabase,
  addDatabaseUser,
  changeDatabasePassword,
  removeDatabaseUser,
  grantDatabase,
  revokeDatabase,
  listFtpAccounts,
  addFtpAccount,
  changeFtpPassword,
  removeFtpAccount,
  listBackupsOfHolder,
  restoreBackup,
]);
