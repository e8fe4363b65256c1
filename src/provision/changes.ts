// What a call changes on an account's system, as data: the account's own server turns it into the
// driver's steps, wherever in the fleet the call arrived (CONTRACT §12). The account travels with
// its objects (its domains, and the kinds to come), so that the server making the change needs
// nothing from the store. A new kind of change adds its line to KINDS, naming its fields by type.
import { Readable } from 'node:stream';
import { type Account, toAccount, toRow } from '../store/accounts.ts';
import { type AccountObjects, fromObjectRows, mainObjects, toObjectRows } from '../store/objects.ts';
import type { AccountRow, ObjectRows } from '../store/schema.ts';
import type { Driver, Step } from './driver.ts';

export type SystemChange =
  /**
   * A new account. `passwordHash`: the store's hash of `password`, which the system user takes
   * rather than hashing it again; a server that sent none, the driver hashes the password.
   */
  | { kind: 'create'; account: Account; objects: AccountObjects; password: string; passwordHash?: string }
  | { kind: 'remove'; account: Account; objects: AccountObjects }
  /** A removed account made again from a backup (restoreacct): its system password as a hash. */
  | { kind: 'recreate'; account: Account; objects: AccountObjects; passwordHash: string }
  | { kind: 'suspend'; account: Account; objects: AccountObjects }
  | { kind: 'unsuspend'; account: Account; objects: AccountObjects }
  | { kind: 'password'; account: Account; objects: AccountObjects; password: string; passwordHash?: string }
  /** Any limit, the package, the feature list or the shell changed from `before` to `account`. */
  | { kind: 'limits'; before: Account; account: Account; objects: AccountObjects }
  /** The account's objects changed from `before` to `objects` (a domain added or removed). */
  | { kind: 'objects'; account: Account; before: AccountObjects; objects: AccountObjects };

type Kind = SystemChange['kind'];

/** A tar archive with nothing in it: its two blocks of zeros. */
const EMPTY_TAR = Buffer.alloc(1024);
type ChangeOf<K extends Kind> = Extract<SystemChange, { kind: K }>;

/** How a field of a change travels: an account as its store row, objects as theirs, text as is. */
const FIELDS = {
  account: {
    encode: (account: Account): AccountRow => toRow(account),
    decode: (value: unknown): Account | null =>
      typeof value === 'object' && value !== null ? toAccount(value as AccountRow) : null,
  },
  /** The account's objects as the change leaves them. */
  objects: {
    encode: (objects: AccountObjects, account: Account): ObjectRows => toObjectRows(account.user, objects),
    // From a server that sent none: the account's main domain alone, all it knew of.
    decode: (value: unknown, account: Account): AccountObjects | null =>
      value === undefined ? mainObjects(account) : fromObjectRows(value),
  },
  /** The account's objects before the change. */
  earlierObjects: {
    encode: (objects: AccountObjects, account: Account): ObjectRows => toObjectRows(account.user, objects),
    decode: (value: unknown): AccountObjects | null => fromObjectRows(value),
  },
  text: {
    encode: (text: string): string => text,
    decode: (value: unknown): string | null => (typeof value === 'string' ? value : null),
  },
  /** Text a server of an earlier version did not send. */
  optionalText: {
    encode: (text: string | undefined): string | undefined => text,
    decode: (value: unknown): string | undefined | null =>
      typeof value === 'string' || value === undefined ? value : null,
  },
} as const;
type FieldType = keyof typeof FIELDS;
type Wire<F extends FieldType> = ReturnType<(typeof FIELDS)[F]['encode']>;

type Fields<K extends Kind> = { [F in Exclude<keyof ChangeOf<K>, 'kind'>]: FieldType };

/** Each kind of change: its fields (the account first), and the driver's steps for it. */
const KINDS: { [K in Kind]: { fields: Fields<K>; steps(driver: Driver, change: ChangeOf<K>): Step[] } } = {
  create: {
    fields: { account: 'account', objects: 'objects', password: 'text', passwordHash: 'optionalText' },
    steps: (driver, { account, password, objects, passwordHash }) =>
      driver.createAccount(account, password, objects, passwordHash),
  },
  recreate: {
    fields: { account: 'account', objects: 'objects', passwordHash: 'text' },
    // Made as an account arriving from another server is, with no files: the restore brings them.
    steps: (driver, { account, objects, passwordHash }) =>
      driver.receiveAccount(
        account,
        { passwordHash, certificate: null, dkimKey: null, files: async () => Readable.from([EMPTY_TAR]) },
        objects,
      ),
  },
  remove: {
    fields: { account: 'account', objects: 'objects' },
    steps: (driver, { account, objects }) => driver.removeAccount(account, objects),
  },
  suspend: {
    fields: { account: 'account', objects: 'objects' },
    steps: (driver, { account, objects }) => driver.suspendAccount(account, objects),
  },
  unsuspend: {
    fields: { account: 'account', objects: 'objects' },
    steps: (driver, { account, objects }) => driver.unsuspendAccount(account, objects),
  },
  password: {
    fields: { account: 'account', objects: 'objects', password: 'text', passwordHash: 'optionalText' },
    steps: (driver, { account, password, objects, passwordHash }) =>
      driver.changePassword(account, password, objects, passwordHash),
  },
  limits: {
    fields: { account: 'account', before: 'account', objects: 'objects' },
    steps: (driver, { before, account, objects }) => driver.changeLimits(before, account, objects),
  },
  objects: {
    fields: { account: 'account', before: 'earlierObjects', objects: 'objects' },
    steps: (driver, { account, before, objects }) => driver.changeObjects(account, before, objects),
  },
};

/** The domains a change touches besides the account's main one, before it and after (journal.ts). */
export function domainsOfChange(change: SystemChange): string[] {
  const lists = [change.objects, ...(change.kind === 'objects' ? [change.before] : [])];
  const domains = lists.flatMap((objects) => objects.domains.map((d) => d.domain));
  return [...new Set(domains)].filter((domain) => domain !== change.account.domain);
}

export function stepsFor(driver: Driver, change: SystemChange): Step[] {
  const steps = KINDS[change.kind].steps as (driver: Driver, change: SystemChange) => Step[];
  return steps(driver, change);
}

/** A change as it travels between servers: accounts and objects as store rows. */
export type ChangeMessage = {
  [K in Kind]: { kind: K } & { [F in keyof Fields<K>]: Wire<Fields<K>[F]> };
}[Kind];

export function changeMessage(change: SystemChange): ChangeMessage {
  const message: Record<string, unknown> = { kind: change.kind };
  const fields: Record<string, FieldType> = KINDS[change.kind].fields;
  const values = change as unknown as Record<string, never>;
  for (const [name, type] of Object.entries(fields)) {
    const encode = FIELDS[type].encode as (value: unknown, account: Account) => unknown;
    message[name] = encode(values[name], change.account);
  }
  return message as ChangeMessage;
}

/** The change a message carries; null when it is not one (the driver checks identifiers again). */
export function changeOf(message: unknown): SystemChange | null {
  if (typeof message !== 'object' || message === null) return null;
  const m = message as Record<string, unknown>;
  if (typeof m.kind !== 'string' || !Object.hasOwn(KINDS, m.kind)) return null;
  const account = FIELDS.account.decode(m.account);
  if (account === null) return null;
  const change: Record<string, unknown> = { kind: m.kind };
  const fields: Record<string, FieldType> = KINDS[m.kind as Kind].fields;
  for (const [name, type] of Object.entries(fields)) {
    const value = FIELDS[type].decode(m[name], account);
    if (value === null) return null;
    if (value !== undefined) change[name] = value;
  }
  return change as SystemChange;
}
