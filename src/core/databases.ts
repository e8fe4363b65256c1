// The names and passwords of the account holder's MariaDB databases and users (CONTRACT §14). A
// name is `<user>_<suffix>`: the account's prefix is added when it is missing, and the suffix is
// `^[a-z0-9_]{1,16}$`. An account's user name has no `_` (CONTRACT §5), so the part before the
// first `_` names the one account a database or user belongs to. At most 16 + 1 + 16 = 33
// characters: within MariaDB's 64 for a database and 80 for a user.
import { createHash } from 'node:crypto';
import { invalid } from './errors.ts';

export const DATABASE_SUFFIX = /^[a-z0-9_]{1,16}$/;
/** What a `name` parameter may be before the prefix is added: a suffix, or prefix and suffix. */
export const DATABASE_NAME_PATTERN = /^[a-z0-9_]{1,33}$/;
/** MariaDB's own: never an account's, whatever the account is called. */
const SYSTEM_NAMES = new Set(['information_schema', 'performance_schema', 'mysql', 'sys']);

export function parseDatabaseName(param: string, raw: string): string {
  if (!DATABASE_NAME_PATTERN.test(raw))
    throw invalid(param, 'a name is 1 to 33 characters of a-z, 0-9 and _: `<suffix>` or `<user>_<suffix>`');
  return raw;
}

/**
 * The whole name a holder's `name` stands for in account `user`: the prefix `<user>_` added when
 * it is missing (so `alice_x` given by bob is bob's `bob_alice_x`, never alice's).
 */
export function prefixedName(param: string, user: string, raw: string): string {
  const prefix = `${user}_`;
  const suffix = raw.startsWith(prefix) ? raw.slice(prefix.length) : raw;
  if (!DATABASE_SUFFIX.test(suffix))
    throw invalid(param, `the part after ${prefix} is 1 to 16 characters of a-z, 0-9 and _`);
  const name = prefix + suffix;
  if (SYSTEM_NAMES.has(name)) throw invalid(param, `${name} is MariaDB's own`);
  return name;
}

/** MariaDB's mysql_native_password hash of a password: `*` and SHA-1(SHA-1(password)), upper-case hex. */
export function mariadbPasswordHash(password: string): string {
  const once = createHash('sha1').update(password, 'utf8').digest();
  return `*${createHash('sha1').update(once).digest('hex').toUpperCase()}`;
}

export const MARIADB_HASH_PATTERN = /^\*[0-9A-F]{40}$/;
