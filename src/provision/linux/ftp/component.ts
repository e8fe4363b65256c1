// The ftp component: an account's FTP accounts (CONTRACT §14) as Pure-FTPd's virtual users, and the
// account's own login over FTPS too (docs/linux-driver.md, FTP). Each account with FTP accounts,
// while not suspended, has one root-only file <ftp_user_dir>/<user> of lines in pure-pw's passwd
// format (`<login>@<main domain>`, the store's SHA-512 crypt hash, the account's uid and gid, the
// directory's pin, pins.ts, as its chroot); every change writes it whole from the store, joins
// every account's file into ftp_users and compiles that with `pure-pw mkdb` into the PureDB file
// Pure-FTPd reads at each login. No password reaches a command line or this file: only hashes,
// which never leave root's files. The account's own login goes through PAM, which Berth lets
// accounts alone through.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Account } from '../../../store/accounts.ts';
import { type FtpAccount, ftpLoginName } from '../../../store/ftp-accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { StepRefused } from '../../driver.ts';
import type { Component, LinuxContext, LinuxStep } from '../context.ts';
import {
  makePrivateDirectory,
  readIfExists,
  restoreFile,
  withScratchDirectory,
  writeFileAtomic,
} from '../files.ts';
import { makeDirectories, removeMadeDirectories, UnsafePath } from '../home.ts';
import { SESSION_HOOK, SFTP_GROUP, SHELL_GROUP } from '../shell/component.ts';
import { render } from '../templates.ts';
import { PUBLIC_HTML_MODE } from '../user/component.ts';
import { componentsOf, ftpPins, pinPath } from './pins.ts';
import { placeFtpSessions } from './sessions.ts';

const PURE_PW = '/usr/bin/pure-pw';
const MB = 1024 * 1024;

/**
 * One virtual user in pure-pw's passwd format: login, hash, uid, gid, gecos, home (its pin, a path
 * of root's, `<ftp_root_dir>/<user>/<login>`; `/./` marks the chroot), then bandwidths, ratios,
 * connections and file quota (empty), the size quota in bytes, and the address and time
 * restrictions (empty). Every value was checked before: no `:` or line
 * break can be in one.
 */
export function ftpUserLine(
  rootDir: string,
  account: Account,
  ids: { uid: number; gid: number },
  ftp: FtpAccount,
): string {
  const home = pinPath(rootDir, account.user, ftp.login);
  const quota = ftp.quota === null ? '' : String(ftp.quota * MB);
  const fields = [ftpLoginName(account, ftp), ftp.passwordHash, ids.uid, ids.gid, '', `${home}/./`];
  const line = [...fields, '', '', '', '', '', '', quota, '', '', '', '', ''].join(':');
  if (line.split(':').length !== 18 || /[\n\r]/.test(line))
    throw new Error(`refusing an FTP user line for ${account.user}`);
  return line;
}

export interface FtpComponent extends Component {
  /** Moves FTP sessions running as an account's user into its control group (sessions.ts). */
  placeSessions(accounts: () => Promise<readonly Account[]>): Promise<void>;
}

export function ftpComponent(ctx: LinuxContext, certificate: string): FtpComponent {
  const { linux } = ctx;
  const pins = ftpPins(ctx);
  const ftpOf = (objects?: AccountObjects) => objects?.ftp_accounts ?? [];
  const userFile = (user: string) => ctx.path(join(linux.ftpUserDir, user));

  /** The account's lines, or null for none (no FTP account, suspended, removed). */
  const linesOf = (account: Account, list: readonly FtpAccount[], removing = false): string | null => {
    if (removing || account.suspension !== null || list.length === 0) return null;
    const ids = ctx.systemUser(account.user);
    return list.map((ftp) => `${ftpUserLine(linux.ftpRootDir, account, ids, ftp)}\n`).join('');
  };

  /** Every account's lines, joined in the order of their names. */
  const joined = () => {
    const dir = ctx.path(linux.ftpUserDir);
    if (!existsSync(dir)) return '';
    return readdirSync(dir)
      .filter((name) => /^[a-z][a-z0-9]{0,15}$/.test(name))
      .sort()
      .map((name) => readIfExists(join(dir, name)) ?? '')
      .join('');
  };

  // One rebuild at a time: two changes at once each compile every account's lines.
  let rebuilding: Promise<void> = Promise.resolve();
  /** Joins every account's lines into ftp_users and compiles the PureDB file Pure-FTPd reads. */
  const rebuild = () => {
    const next = rebuilding.then(async () => {
      writeFileAtomic(ctx.path(linux.ftpUsers), joined(), 0o600);
      await ctx.runner.run([PURE_PW, 'mkdb', ctx.path(linux.ftpDatabase), '-f', ctx.path(linux.ftpUsers)]);
    });
    rebuilding = next.catch(() => {});
    return next;
  };

  /** The account's file as `list` makes it, and the database with it; undone by both put back. */
  const write = (account: Account, list: readonly FtpAccount[], removing = false): LinuxStep => {
    let before: string | null = null;
    return ctx.step(
      'FTP users',
      async () => {
        before = readIfExists(userFile(account.user));
        restoreFile(userFile(account.user), linesOf(account, list, removing), 0o600);
        await rebuild();
      },
      async () => {
        restoreFile(userFile(account.user), before, 0o600);
        await rebuild();
      },
    );
  };

  /**
   * The directory of an FTP account, made as public_html is (the account's, with the web server's
   * group) where it is missing, as root that follows no link on the way: one the account planted
   * is refused (400 invalid_parameter), never followed. Undone by removing what it made, where
   * still empty.
   */
  const directoryStep = (account: Account, ftp: FtpAccount): LinuxStep => {
    let made: string[][] = [];
    const home = ctx.path(account.homedir);
    return ctx.step(
      `FTP directory of ${ftp.login}`,
      async () => {
        const owner = { uid: ctx.systemUser(account.user).uid, gid: ctx.systemUser(linux.webUser).gid };
        try {
          made = makeDirectories(home, componentsOf(ftp), owner, PUBLIC_HTML_MODE);
        } catch (error) {
          if (error instanceof UnsafePath)
            throw new StepRefused('directory', `${ftp.directory}: ${error.message}, which is never followed`);
          throw error;
        }
      },
      async () => removeMadeDirectories(home, made),
    );
  };
  /**
   * Pins the FTP account's directory where its login lands (pins.ts); undone by taking the pin
   * away. A link the account planted since the directory was made is refused, never followed.
   */
  const pinStep = (account: Account, ftp: FtpAccount): LinuxStep =>
    ctx.step(
      `FTP root of ${ftp.login}`,
      async () => {
        try {
          await pins.pin(account, ftp);
        } catch (error) {
          if (error instanceof UnsafePath)
            throw new StepRefused('directory', `${ftp.directory}: ${error.message}, which is never followed`);
          throw error;
        }
      },
      () => pins.unpin(account.user, ftp.login),
    );
  /** Takes the pin of an FTP account that goes away; undone by pinning it again. */
  const unpinStep = (account: Account, ftp: FtpAccount): LinuxStep =>
    ctx.step(
      `FTP root of ${ftp.login} removed`,
      () => pins.unpin(account.user, ftp.login),
      () => pins.pin(account, ftp),
    );
  /** Every FTP account of the store pinned, and the pins of logins it no longer has taken away. */
  const settlePins = async (account: Account, list: readonly FtpAccount[]) => {
    const failures: string[] = [];
    for (const ftp of list)
      await pins.pin(account, ftp).catch((error: unknown) => {
        failures.push(`${ftp.login}: ${(error as Error).message}`);
      });
    const known = new Set(list.map((ftp) => ftp.login));
    for (const login of pins.pinned(account.user))
      if (!known.has(login)) await pins.unpin(account.user, login);
    if (failures.length > 0)
      throw new Error(`FTP roots not pinned (their logins see an empty directory): ${failures.join('; ')}`);
  };
  const sameUsers = (account: Account, a: readonly FtpAccount[], b: readonly FtpAccount[]) =>
    a.length === b.length &&
    a.every((ftp, i) => {
      const other = b[i]!;
      return (
        ftpUserLine(linux.ftpRootDir, account, { uid: 0, gid: 0 }, ftp) ===
          ftpUserLine(linux.ftpRootDir, account, { uid: 0, gid: 0 }, other) &&
        ftp.directory === other.directory
      );
    });

  /** Berth's pure-ftpd.conf for this server's settings. */
  const configText = () => {
    const [first, last] = linux.ftpPassivePorts;
    const address = linux.ftpAddress === '*' ? '' : linux.ftpAddress;
    return render('ftp/pure-ftpd.conf', {
      bind: `${address},${linux.ftpPort}`,
      passive_first: String(first),
      passive_last: String(last),
      certificate,
      database: linux.ftpDatabase,
    });
  };
  function prepareServer(): void {
    if (readIfExists(ctx.path(linux.ftpConfig)) !== configText())
      writeFileAtomic(ctx.path(linux.ftpConfig), configText(), 0o644);
    if (readIfExists(ctx.path(linux.pamFtp)) !== pamFile())
      writeFileAtomic(ctx.path(linux.pamFtp), pamFile(), 0o644);
  }
  const pamFile = () =>
    render('ftp/pam-ftp.conf', { hook: SESSION_HOOK, shell_group: SHELL_GROUP, sftp_group: SFTP_GROUP });

  return {
    name: 'ftp',

    async placeSessions(accounts) {
      if (ctx.groups) await placeFtpSessions(ctx.groups, accounts, linux.cgroupParent);
    },

    async prepare() {
      if (!existsSync(PURE_PW))
        throw new Error(
          "the ftp component needs Debian's pure-ftpd (apt-get install pure-ftpd), or ftp left out of [linux] components",
        );
      makePrivateDirectory(ctx.path(linux.ftpUserDir));
      prepareServer();
      await rebuild();
    },

    create(account, _origin, objects) {
      const list = ftpOf(objects);
      if (list.length === 0) return [];
      return [
        ...list.flatMap((ftp) => [directoryStep(account, ftp), pinStep(account, ftp)]),
        write(account, list),
      ];
    },
    suspend: (account, objects) => (ftpOf(objects).length > 0 ? [write(account, ftpOf(objects))] : []),
    unsuspend: (account, objects) => (ftpOf(objects).length > 0 ? [write(account, ftpOf(objects))] : []),
    remove(account, objects) {
      const steps = existsSync(userFile(account.user)) ? [write(account, [], true)] : [];
      if (ftpOf(objects).length === 0 && pins.pinned(account.user).length === 0) return steps;
      // Every pin of the account's, the store's or not; undone by pinning the store's again.
      const unpin = ctx.step(
        'FTP roots removed',
        () => pins.unpinAll(account.user),
        async () => {
          for (const ftp of ftpOf(objects)) await pins.pin(account, ftp);
        },
      );
      return [...steps, unpin];
    },
    changeObjects(account, before, after) {
      const was = ftpOf(before);
      const now = ftpOf(after);
      if (sameUsers(account, was, now)) return [];
      const known = new Set(was.map((ftp) => ftp.login));
      const kept = new Set(now.map((ftp) => ftp.login));
      return [
        ...now
          .filter((ftp) => !known.has(ftp.login))
          .flatMap((ftp) => [directoryStep(account, ftp), pinStep(account, ftp)]),
        write(account, now),
        // Once no login names them: a session still inside keeps its pin until it ends.
        ...was.filter((ftp) => !kept.has(ftp.login)).map((ftp) => unpinStep(account, ftp)),
      ];
    },

    // Mounts do not outlive a reboot: each start pins every FTP account's directory again, and
    // writes the account's logins again where they differ (a server's logins of an earlier Berth,
    // chrooted below the home itself).
    async resume(account, objects) {
      const list = ftpOf(objects);
      try {
        await settlePins(account, list);
      } finally {
        if (readIfExists(userFile(account.user)) !== linesOf(account, list)) await write(account, list).run();
      }
    },

    async reconcile(account, objects) {
      await write(account, ftpOf(objects)).run();
      await settlePins(account, ftpOf(objects));
    },

    async purge(account) {
      await write(account, [], true).run();
      await pins.unpinAll(account.user);
    },

    async inspect(accounts, _sites, objects) {
      const differences: string[] = [];
      const known = new Set(accounts.map((a) => a.user));
      for (const account of accounts) {
        const expected = linesOf(account, ftpOf(objects.get(account.user)));
        const actual = readIfExists(userFile(account.user));
        if (expected === actual) continue;
        const what =
          account.suspension !== null && actual !== null
            ? 'suspended, but its FTP accounts can log in'
            : actual === null
              ? 'its FTP accounts are missing from the FTP users'
              : expected === null
                ? 'the FTP users have logins of it that the store does not have'
                : "its FTP users differ from the store's FTP accounts";
        differences.push(`${account.user}: ${what} (${join(linux.ftpUserDir, account.user)})`);
      }
      for (const account of accounts)
        differences.push(...pinDifferences(account, ftpOf(objects.get(account.user))));
      for (const name of pins.users())
        if (!known.has(name))
          differences.push(`${name}: FTP roots ${join(linux.ftpRootDir, name)} with no account in the store`);
      const dir = ctx.path(linux.ftpUserDir);
      if (existsSync(dir))
        for (const name of readdirSync(dir))
          if (!known.has(name))
            differences.push(
              `${name}: FTP users ${join(linux.ftpUserDir, name)} with no account in the store`,
            );
      if (readIfExists(ctx.path(linux.ftpUsers)) !== joined())
        differences.push(`${linux.ftpUsers} is not the accounts' FTP users joined: Pure-FTPd logs in others`);
      else if (!(await databaseMatches()))
        differences.push(`${linux.ftpDatabase} is not ${linux.ftpUsers} compiled: Pure-FTPd logs in others`);
      const config = readIfExists(ctx.path(linux.ftpConfig));
      const pam = readIfExists(ctx.path(linux.pamFtp));
      if (config !== configText())
        differences.push(
          `${linux.ftpConfig} is not Berth's: Pure-FTPd may run without its settings (TLS required, chroot)`,
        );
      if (pam !== pamFile())
        differences.push(`${linux.pamFtp} is not Berth's: FTP may let in logins other than the accounts'`);
      return differences;
    },
  };

  /** Each FTP account's pin that is missing or pins another directory, and pins of no login. */
  function pinDifferences(account: Account, list: readonly FtpAccount[]): string[] {
    const found: string[] = [];
    for (const ftp of list) {
      // As the logins see it: in Pure-FTPd's mount namespace.
      const state = pins.state(account, ftp, 'ftpd');
      const where = `${pinPath(linux.ftpRootDir, account.user, ftp.login)} (${ftp.directory || 'the home'})`;
      if (state === 'missing')
        found.push(
          `${account.user}: FTP account ${ftp.login} is not pinned: its login sees an empty directory ${where}`,
        );
      else if (state === 'other')
        found.push(
          `${account.user}: FTP account ${ftp.login} is pinned to another directory than its own ${where}`,
        );
    }
    const known = new Set(list.map((ftp) => ftp.login));
    for (const login of pins.pinned(account.user))
      if (!known.has(login))
        found.push(`${account.user}: FTP root ${login} pinned for no FTP account of the store`);
    return found;
  }

  /**
   * Whether the PureDB file is what ftp_users compiles to (pure-pw's output is the same each time),
   * compiled for the comparison in a directory of root's alone that goes at once: doctor writes
   * nothing where Pure-FTPd reads.
   */
  async function databaseMatches(): Promise<boolean> {
    const database = ctx.path(linux.ftpDatabase);
    if (!existsSync(database)) return false;
    return withScratchDirectory('berth-ftp-check-', async (dir) => {
      const check = join(dir, 'check.pdb');
      await ctx.runner.run([PURE_PW, 'mkdb', check, '-f', ctx.path(linux.ftpUsers)]);
      return readFileSync(check).equals(readFileSync(database));
    });
  }
}
