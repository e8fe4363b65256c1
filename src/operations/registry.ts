// Every API operation, by the name in its path. One grep away from each file.
import { accountSummary } from './account-summary.ts';
import { addPackage } from './add-package.ts';
import { changeContactEmail } from './change-contact-email.ts';
import { changePackage } from './change-package.ts';
import { createAccount } from './create-account.ts';
import { credentialCheck } from './credential-check.ts';
import { editPackage } from './edit-package.ts';
import { editQuota } from './edit-quota.ts';
import { killPackage } from './kill-package.ts';
import { listAccounts } from './list-accounts.ts';
import { listPackages } from './list-packages.ts';
import { listSuspended } from './list-suspended.ts';
import { loadAverage } from './load-average.ts';
import type { Operation, ParamSchema } from './operation.ts';
import { passwd } from './passwd.ts';
import { removeAccount } from './remove-account.ts';
import { resellerCount } from './reseller-count.ts';
import { setupReseller } from './setup-reseller.ts';
import { suspendAccount } from './suspend-account.ts';
import { terminateReseller } from './terminate-reseller.ts';
import { testConnection } from './test-connection.ts';
import { unsuspendAccount } from './unsuspend-account.ts';
import { usageStatistics } from './usage-statistics.ts';
import { usersCount } from './users-count.ts';
import { versionOperation } from './version.ts';

// biome-ignore lint/suspicious/noExplicitAny: each operation has its own schema; callers parse with it.
const all: Operation<any>[] = [
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
  addPackage,
  editPackage,
  killPackage,
];

export const operations: ReadonlyMap<string, Operation<ParamSchema>> = new Map(
  all.map((op) => [op.name, op]),
);

export function findOperation(name: string): Operation<ParamSchema> | undefined {
  return operations.get(name);
}
