// What a call changes on an account's system, as data: the account's own server turns it into the
// driver's steps, wherever in the fleet the call arrived (CONTRACT §12).
import { type Account, toAccount, toRow } from '../store/accounts.ts';
import type { AccountRow } from '../store/schema.ts';
import type { Driver, Step } from './driver.ts';

export type SystemChange =
  | { kind: 'create'; account: Account; password: string }
  | { kind: 'remove'; account: Account }
  | { kind: 'suspend'; account: Account }
  | { kind: 'unsuspend'; account: Account }
  | { kind: 'password'; account: Account; password: string }
  /** Any limit, the package, the feature list or the shell changed from `before` to `account`. */
  | { kind: 'limits'; before: Account; account: Account };

export function stepsFor(driver: Driver, change: SystemChange): Step[] {
  switch (change.kind) {
    case 'create':
      return driver.createAccount(change.account, change.password);
    case 'remove':
      return driver.removeAccount(change.account);
    case 'suspend':
      return driver.suspendAccount(change.account);
    case 'unsuspend':
      return driver.unsuspendAccount(change.account);
    case 'password':
      return driver.changePassword(change.account, change.password);
    case 'limits':
      return driver.changeLimits(change.before, change.account);
  }
}

/** A change as it travels between servers: accounts as store rows. */
export type ChangeMessage =
  | { kind: 'create' | 'password'; account: AccountRow; password: string }
  | { kind: 'remove' | 'suspend' | 'unsuspend'; account: AccountRow }
  | { kind: 'limits'; before: AccountRow; account: AccountRow };

export function changeMessage(change: SystemChange): ChangeMessage {
  if (change.kind === 'limits')
    return { kind: 'limits', before: toRow(change.before), account: toRow(change.account) };
  if (change.kind === 'create' || change.kind === 'password')
    return { kind: change.kind, account: toRow(change.account), password: change.password };
  return { kind: change.kind, account: toRow(change.account) };
}

const KINDS = new Set(['create', 'remove', 'suspend', 'unsuspend', 'password', 'limits']);

/** The change a message carries; null when it is not one (the driver checks identifiers again). */
export function changeOf(message: unknown): SystemChange | null {
  const m = message as Partial<Record<'kind' | 'password', unknown>> & {
    account?: AccountRow;
    before?: AccountRow;
  };
  if (typeof m !== 'object' || m === null || typeof m.kind !== 'string' || !KINDS.has(m.kind)) return null;
  if (typeof m.account !== 'object' || m.account === null) return null;
  const account = toAccount(m.account);
  if (m.kind === 'limits') {
    if (typeof m.before !== 'object' || m.before === null) return null;
    return { kind: 'limits', before: toAccount(m.before), account };
  }
  if (m.kind === 'create' || m.kind === 'password') {
    if (typeof m.password !== 'string') return null;
    return { kind: m.kind, account, password: m.password };
  }
  return { kind: m.kind as 'remove' | 'suspend' | 'unsuspend', account };
}
