// Where an account's databases keep their files (docs/linux-driver.md, Databases and Quotas). On a
// server whose homes are on btrfs, each account's databases live in a subvolume of its own beside
// the homes, `<home base>/.berth-databases/<user>` (MariaDB's user's, 0700; the directory above is
// root's, 0711, so no account lists it), which is in the account's qgroup `1/<gid>`: the quota of
// the home counts them and stops an INSERT past it ("The table … is full"). Each database's
// directory is made there (MariaDB's user's, 0700) and MariaDB's data directory holds a link of
// root's to it, `<datadir>/<database>`, made before CREATE DATABASE; MariaDB follows a linked
// database directory (`symbolic_links`, on by default) and DROP DATABASE removes the directory and
// the link. No account can write anywhere on these paths, so nothing root does here meets a link an
// account could plant. Elsewhere (Linux user quotas, no quota) the databases stay in the data
// directory, outside the quota, as `berth doctor` says.
import { lstatSync, readdirSync, readlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import type { LinuxContext } from '../context.ts';
import { makeServiceDirectory, placeLink, removeFile } from '../files.ts';
import { BTRFS, isSubvolume, removeTree } from '../filesystems.ts';
import { parseQgroups } from '../user/btrfs-quota.ts';
import { chooseQuotaBackend } from '../user/quota.ts';
import { runSql } from './sql.ts';

/** The directory beside the homes that holds each account's databases' subvolume. */
export const DATABASES_DIR = '.berth-databases';
const TOP_MODE = 0o711;
const OWN_MODE = 0o700;

export interface DatabaseStorage {
  /** Whether the account's databases are counted in its quota (its homes are on btrfs). */
  counted(account: Account): boolean;
  /** MariaDB's data directory, as the server says (`@@datadir`). */
  datadir(): Promise<string>;
  /**
   * Makes a place for each of these databases in the account's quota, before CREATE DATABASE: the
   * account's subvolume (in its qgroup), the database's directory there, its link in the data
   * directory. A database already in the data directory itself is left there, for doctor to name.
   * Answers the databases whose link it made (MariaDB had none of that name before).
   */
  place(account: Account, names: readonly string[]): Promise<string[]>;
  /** Removes what dropped databases may have left: a link in the data directory, a directory. */
  clear(account: Account, names: readonly string[]): Promise<void>;
  /**
   * The databases' directories of no account here (a removal cut short): in the home base's
   * `.berth-databases` and in those of these accounts' homes.
   */
  strays(accounts: readonly Account[]): string[];
  /** Removes the account's subvolume and every link of its databases (its databases dropped). */
  removeAll(account: Account): Promise<void>;
  /**
   * What doctor says of the account's stored databases (`seen`: those MariaDB lists): each one's
   * place, whether MariaDB reaches it, the subvolume's qgroup and modes.
   */
  inspect(account: Account, names: readonly string[], seen: ReadonlySet<string>): Promise<string[]>;
}

export function databaseStorage(ctx: LinuxContext): DatabaseStorage {
  let known: string | null = null;
  const datadir = async () => {
    if (known === null) {
      const [[dir] = []] = await runSql(ctx, ['SELECT @@datadir']);
      if (!dir?.startsWith('/')) throw new Error('MariaDB did not say where its data directory is');
      known = dir.replace(/\/+$/, '');
    }
    return known;
  };
  const homeOf = (account: Account) => ctx.path(account.homedir);
  const base = (account: Account) => dirname(homeOf(account));
  const top = (account: Account) => join(base(account), DATABASES_DIR);
  const own = (account: Account) => join(top(account), account.user);
  const placeOf = (account: Account, name: string) => join(own(account), name);
  const counted = (account: Account) => chooseQuotaBackend(ctx.linux, base(account)) === 'btrfs';
  const idOf = async (path: string) =>
    (await ctx.runner.run([BTRFS, 'inspect-internal', 'rootid', '--', path])).stdout.trim();
  /** The account's qgroup, numbered by its home's group as the quota's (user/quota.ts). */
  const groupOf = (account: Account) => `1/${lstatSync(homeOf(account)).gid}`;
  const idempotent = (argv: string[]) =>
    ctx.runner.run(argv).catch((error: Error) => {
      if (!/exist/i.test(error.message)) throw error;
    });
  const entry = (path: string) => lstatSync(path, { throwIfNoEntry: false });

  /** The account's subvolume, made when missing, MariaDB's user's, in the account's qgroup. */
  async function ensureOwn(account: Account, server: { uid: number; gid: number }): Promise<string> {
    makeServiceDirectory(top(account), 0, 0, TOP_MODE);
    const path = own(account);
    const found = entry(path);
    if (!found) await ctx.runner.run([BTRFS, 'subvolume', 'create', '--', path]);
    else if (!isSubvolume(path)) throw new Error(`${path} is not a btrfs subvolume`);
    makeServiceDirectory(path, server.uid, server.gid, OWN_MODE);
    const group = groupOf(account);
    // Each command names the home base: a command naming a path in a full qgroup fails (EDQUOT).
    await idempotent([BTRFS, 'qgroup', 'create', group, base(account)]);
    await idempotent([BTRFS, 'qgroup', 'assign', `0/${await idOf(path)}`, group, base(account)]);
    return path;
  }

  return {
    counted,
    datadir,

    async place(account, names) {
      const made: string[] = [];
      if (names.length === 0 || !counted(account)) return made;
      const data = await datadir();
      // MariaDB's user owns its data directory: the files in the account's subvolume are its too.
      const server = lstatSync(data);
      await ensureOwn(account, server);
      for (const name of names) {
        const link = join(data, name);
        const found = entry(link);
        const target = placeOf(account, name);
        const ours = found?.isSymbolicLink() === true && readlinkSync(link) === target;
        // A directory of the data directory (a database made before) or a link elsewhere holds a
        // database's files: left as it is, for doctor to name.
        if (found && !ours) continue;
        makeServiceDirectory(target, server.uid, server.gid, OWN_MODE);
        if (ours) continue;
        placeLink(link, target);
        made.push(name);
      }
      return made;
    },

    async clear(account, names) {
      if (names.length === 0 || !counted(account)) return;
      const data = await datadir();
      for (const name of names) {
        const link = join(data, name);
        if (entry(link)?.isSymbolicLink()) removeFile(link);
        // MariaDB's DROP DATABASE removes it; one left (a drop cut short) goes, links not followed.
        if (entry(own(account))?.isDirectory()) await removeTree(ctx.runner, placeOf(account, name));
      }
    },

    strays(accounts) {
      const tops = new Set([join(ctx.path(ctx.config.homeBase), DATABASES_DIR), ...accounts.map(top)]);
      const users = new Set(accounts.map((a) => a.user));
      const found: string[] = [];
      for (const dir of tops) {
        if (!entry(dir)?.isDirectory()) continue;
        for (const name of readdirSync(dir)) if (!users.has(name)) found.push(join(dir, name));
      }
      return found;
    },

    async removeAll(account) {
      if (!counted(account)) return;
      const data = await datadir();
      const prefix = `${account.user}_`;
      for (const name of readdirSync(data))
        if (name.startsWith(prefix) && entry(join(data, name))?.isSymbolicLink())
          removeFile(join(data, name));
      const path = own(account);
      if (isSubvolume(path)) await ctx.runner.run([BTRFS, 'subvolume', 'delete', '--', path]);
      else if (entry(path)) await removeTree(ctx.runner, path);
    },

    async inspect(account, names, seen) {
      if (names.length === 0 || !counted(account)) return [];
      const say = (what: string) => `${account.user}: ${what}`;
      const differences: string[] = [];
      const data = await datadir();
      let linked = 0;
      for (const name of names) {
        const link = join(data, name);
        const found = entry(link);
        if (found?.isSymbolicLink()) linked++;
        if (found?.isDirectory())
          differences.push(say(`database ${name} is in ${data} itself, outside the account's disk quota`));
        else if (found?.isSymbolicLink() && readlinkSync(link) !== placeOf(account, name))
          differences.push(
            say(
              `database ${name}'s link in ${data} leads to ${readlinkSync(link)}, not ${placeOf(account, name)}`,
            ),
          );
        else if (found?.isSymbolicLink() && !entry(placeOf(account, name))?.isDirectory())
          differences.push(say(`database ${name}'s directory ${placeOf(account, name)} is missing`));
        // There, and yet not listed: MariaDB's service does not see the homes' filesystem.
        else if (found?.isSymbolicLink() && !seen.has(name))
          differences.push(
            say(
              `MariaDB does not reach database ${name} in ${placeOf(account, name)}: its service must see ${top(account)} (docs/running.md, MariaDB)`,
            ),
          );
      }
      const path = own(account);
      if (!isSubvolume(path)) {
        if (entry(path) || linked > 0)
          differences.push(say(`${path} is not a btrfs subvolume: the databases are outside the disk quota`));
        return differences;
      }
      const shown = await ctx.runner.run([BTRFS, 'qgroup', 'show', '-pre', '--raw', '--', base(account)]);
      const group = groupOf(account);
      if (
        !parseQgroups(shown.stdout)
          .get(`0/${await idOf(path)}`)
          ?.parents.includes(group)
      )
        differences.push(
          say(`the databases' subvolume ${path} is not in qgroup ${group}: outside the disk quota`),
        );
      const stat = lstatSync(path);
      const server = lstatSync(data);
      if (stat.uid !== server.uid || (stat.mode & 0o7777) !== OWN_MODE)
        differences.push(say(`${path} is not MariaDB's user's alone (0700)`));
      const above = lstatSync(top(account));
      if (above.uid !== 0 || (above.mode & 0o7777) !== TOP_MODE)
        differences.push(say(`${top(account)} is not root's, 0711`));
      return differences;
    },
  };
}
