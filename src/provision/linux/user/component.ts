// The user component: the system user (GECOS naming the domain), its password, its home with
// public_html, its login shell and its disk quota. Suspension locks the password and takes the
// shell. Removal of the user is the last step of removeacct, since it cannot be undone.
import { dirname, join } from 'node:path';
import { NOLOGIN } from '../../../operations/record.ts';
import type { Account } from '../../../store/accounts.ts';
import { CONFINE } from '../confine/confine.ts';
import type { Component, LinuxContext, LinuxStep } from '../context.ts';
import { removeFile } from '../files.ts';
import { ensureDirectory, type Kind, kindOf, settleDirectory } from '../home.ts';
import { findSystemUser, processOf, shadowPassword, systemGroupExists, systemUsers } from '../passwd.ts';
import { CommandFailed } from '../run.ts';
import { waitFor } from '../wait.ts';
import { userDatabase } from './database.ts';
import { removeIpcObjects, removeLeftovers, removeMessageQueues } from './leftovers.ts';
import { chooseQuotaBackend, quotaBackend } from './quota.ts';
import type { QuotaBackend } from './quota-backend.ts';

/**
 * The home is root's (OpenSSH chroots logins to it, and allows that only for a root-owned directory
 * no one else may write); the account's group may list it, others only pass through, to
 * public_html for the web server. public_html is the account's, with the web server's group: nginx
 * reads it, no other account can enter it, however readable the files inside (0644 uploads).
 */
export const HOME_MODE = 0o751;
export const PUBLIC_HTML_MODE = 0o750;

/** The GECOS field names the domain, and marks the user as one Berth made (for `berth doctor`). */
export function gecosOf(account: { domain: string }): string {
  return `Berth ${account.domain}`;
}

const describeKind = (kind: Kind) =>
  ({
    missing: 'missing',
    link: 'a symbolic link (not followed)',
    file: 'a file, not a directory',
    other: 'not a directory',
    directory: 'a directory',
  })[kind];

export interface UserComponent extends Component {
  /** The irreversible end of removeacct: the user, its home, its mail spool. */
  removeUser(account: Account): LinuxStep;
  /** Ends every process of the account (suspension's last step): its group, then its uid's. */
  endProcesses(account: Account): LinuxStep;
  /** Brings what the accounts made since under their disk quotas (QuotaBackend.enforce). */
  enforce(accounts: readonly Account[]): Promise<void>;
  /** The sweep of every home base (QuotaBackend.sweep); `accounts` read only when it must. */
  sweepQuotas(accounts: () => Promise<readonly Account[]>): Promise<void>;
  /** The bytes each account takes, by user, where its quota backend counts them (diskUsage). */
  diskUsage(accounts: readonly Account[]): Promise<Map<string, number>>;
}

/**
 * `groupsOf`: the groups the user is in, suspended or not (the shell component's, whose sshd rules
 * apply).
 */
export function userComponent(
  ctx: LinuxContext,
  groupsOf: (account: Account, suspended?: boolean) => string[] = () => [],
): UserComponent {
  const { config, linux, runner, prefix, root } = ctx;
  /**
   * A shell account logs in through Berth's confinement (confine/confine.ts), which runs
   * `config.shell` under its seccomp filter: sshd runs the login shell inside the jail, after the
   * last step root takes, and nothing of the account runs before it.
   */
  const shellOf = (account: Account, suspended = account.suspension !== null) =>
    suspended || !account.shellEnabled ? NOLOGIN : CONFINE;
  /**
   * The account suspended or not, in one edit of the user database: its password locked or not,
   * its login shell and its groups. The edits of a burst of suspensions are written together
   * (database.ts).
   */
  const database = userDatabase(root);
  const suspendUser = (account: Account, suspended: boolean) => {
    const groups = groupsOf(account, suspended);
    return database.edit({
      user: account.user,
      locked: suspended,
      shell: shellOf(account, suspended),
      ...(groups.length > 0 ? { groups } : {}),
    });
  };
  const usermod = (user: string, args: string[]) =>
    runner.run(['/usr/sbin/usermod', ...prefix, ...args, '--', user]);
  /**
   * Makes the system user, in its SSH groups, with `hash` as its password, and its group with the
   * same number as its gid: the account's uid from the store, refused when the system has it as a
   * user or a group id. An account made before uids were kept (uid null) gets the next free one,
   * as useradd picked it then.
   */
  const addUser = (account: Account, hash: string) =>
    database.add({
      user: account.user,
      uid: account.uid,
      gecos: gecosOf(account),
      home: account.homedir,
      shell: shellOf(account),
      groups: groupsOf(account),
      hash,
    });
  /**
   * Removes the user, and its group (userdel leaves it when login.defs says USERGROUPS_ENAB no);
   * either gone already is no failure.
   */
  const userdel = async (user: string) => {
    if (findSystemUser(root, user)) await runner.run(['/usr/sbin/userdel', ...prefix, '--', user]);
    if (systemGroupExists(root, user)) await runner.run(['/usr/sbin/groupdel', ...prefix, '--', user]);
  };
  /**
   * Sets the password field of the shadow file from standard input: a hash given on a command line
   * (usermod -p) is in /proc/<pid>/cmdline, which every user of the system may read. chpasswd has
   * no --prefix; -R chroots it into the system root, where it needs nothing but the files of /etc.
   */
  const setPasswordField = async (user: string, field: string) => {
    if (/[:\n]/.test(field))
      throw new Error(`refusing a password hash for ${user} that would leave its line`);
    await runner.run(['/usr/sbin/chpasswd', '-e', ...(ctx.live ? [] : ['-R', root])], {
      input: `${user}:${field}\n`,
    });
  };
  /**
   * Ends every process of the account: its control group (its PHP-FPM master and workers, its SSH
   * and SFTP sessions, whatever they forked, detached or not), then anything else running as its
   * uid (an IMAP session Dovecot runs for it). With `remove`, the group goes too. Then the SysV IPC
   * objects its uid left, which outlive every process. `known` is its uid when its user is gone
   * already (a removal run again).
   */
  const endProcesses = async (name: string, remove = false, known: number | null = null) => {
    // Below another system root the uid is not this machine's: nothing there runs.
    if (!ctx.live) return;
    if (ctx.groups) await (remove ? ctx.groups.remove(name) : ctx.groups.kill(name));
    const found = findSystemUser(root, name)?.uid ?? known;
    if (found === null) return;
    const uid = String(found);
    // pkill looks through every process of the machine, off Berth's thread: it exits 1 when none
    // is the user's (the common case: the control group's were ended above).
    const killed = () =>
      runner.run(['/usr/bin/pkill', '-KILL', '-U', uid]).then(
        () => true,
        (error: unknown) => !(error instanceof CommandFailed && error.exitCode === 1) && processOf(found),
      );
    for (let round = 0; await killed(); round++) {
      if (round > 100) throw new Error(`the processes of ${name} did not end`);
      await waitFor(`the processes of ${name} to end`, () => !processOf(found), 200).catch(() => {});
    }
    if (found !== 0) {
      await removeIpcObjects(ctx, found);
      await removeMessageQueues(ctx, found);
    }
  };
  const { systemUser } = ctx;
  /**
   * The system's hash of a password: the one the store keeps, when the call made it (a SHA-512
   * crypt hash, as chpasswd -e takes it), else one made here in a worker thread.
   */
  const systemHash = (password: string, passwordHash: string | undefined) =>
    passwordHash !== undefined && /^\$6\$[^:\n]+$/.test(passwordHash)
      ? Promise.resolve(passwordHash)
      : ctx.hashPassword(password);
  const groupExists = (user: string) => ctx.groups?.list().includes(user) ?? false;
  /** The account's control group, bounded as configured: every process it runs is in it. */
  const ensureGroup = (account: Account) =>
    ctx.groups?.ensure(account.user, { processes: linux.accountProcesses, memoryMb: linux.accountMemory });
  const publicHtmlOwner = (account: Account) => ({
    uid: systemUser(account.user).uid,
    gid: systemUser(linux.webUser).gid,
  });
  /**
   * Ends the user's processes (no login starting again: the user is locked and expired first),
   * removes its home, then the user, its mail spool and whatever it left elsewhere (files in /tmp,
   * its crontab, mail it queued): found by its uid, which is never given again, so that nothing of
   * it reaches a later account. The home goes before the user, so that a removal cut short (a home
   * the kernel would not delete) leaves no file of a uid without a user; and each part gone already
   * is no failure, so that removeacct run again finishes what one cut short left.
   */
  const forgetUser = async (account: Account) => {
    const found = findSystemUser(root, account.user);
    // The store's uid names the account's files once its user is gone (a removal run again).
    const uid = found?.uid ?? account.uid;
    if (found) await usermod(account.user, ['-L', '-e', '1', '-s', NOLOGIN]);
    await endProcesses(account.user, true, uid);
    await quotaOf(account).removeHome(ctx.path(account.homedir), found?.gid ?? uid ?? undefined);
    await userdel(account.user);
    removeFile(ctx.path(join('/var/mail', account.user)));
    if (uid !== null && uid !== 0) await removeLeftovers(ctx, account.user, uid);
  };

  // The backend follows the filesystem of the home base (docs/linux-driver.md, "Quotas"); a
  // setting it cannot work with stops Berth at start.
  chooseQuotaBackend(linux, ctx.path(config.homeBase));
  const quotaOf = (account: Account): QuotaBackend =>
    quotaBackend(ctx, chooseQuotaBackend(linux, dirname(ctx.path(account.homedir))));
  const housed = (account: Account) => ({ account, home: ctx.path(account.homedir) });
  /** The home bases of the accounts (real paths), noted as each account is made or resumed. */
  const bases = new Set([ctx.path(config.homeBase)]);
  const noteBase = (account: Account) => bases.add(dirname(ctx.path(account.homedir)));

  /** The accounts whose homes are there, by the quota backend of each home's filesystem. */
  function byBackend(accounts: readonly Account[]) {
    const homes = new Map<QuotaBackend['name'], ReturnType<typeof housed>[]>();
    for (const account of accounts) {
      if (kindOf(ctx.path(account.homedir), []) !== 'directory') continue;
      const name = quotaOf(account).name;
      homes.set(name, [...(homes.get(name) ?? []), housed(account)]);
    }
    return homes;
  }

  function quotaSteps(account: Account, before: Account | null): LinuxStep[] {
    const quota = quotaOf(account);
    if (quota.name === 'none') return [];
    return [
      ctx.step(
        'disk quota',
        () => quota.setLimit(housed(account), account.limits.quota),
        () => quota.setLimit(housed(account), before?.limits.quota ?? null),
      ),
    ];
  }

  return {
    name: 'user',

    create(account, origin) {
      const home = ctx.path(account.homedir);
      noteBase(account);
      // A moved account keeps its hash as it was, locked while it is suspended. A new one's is
      // computed in a worker thread, and written with the user.
      const hash = () =>
        'moved' in origin
          ? Promise.resolve(origin.moved.passwordHash)
          : systemHash(origin.password, origin.passwordHash);
      return [
        ctx.step(
          'system user',
          async () => addUser(account, await hash()),
          async () => void (await userdel(account.user)),
        ),
        ctx.step(
          'home directory',
          async () => {
            await quotaOf(account).makeHome(home, { uid: 0, gid: systemUser(account.user).gid }, HOME_MODE);
            if (
              ensureDirectory(home, ['public_html'], publicHtmlOwner(account), PUBLIC_HTML_MODE) !==
              'directory'
            )
              throw new Error(`${join(account.homedir, 'public_html')} is not a directory`);
          },
          () => quotaOf(account).removeHome(home),
        ),
        ...quotaSteps(account, null),
        ctx.step(
          'control group',
          async () => ensureGroup(account),
          async () => void (await ctx.groups?.remove(account.user)),
        ),
      ];
    },

    async resume(account) {
      noteBase(account);
      ensureGroup(account);
      // A login shell set before shells were confined is Berth's confinement from now on.
      const user = findSystemUser(root, account.user);
      if (user && user.shell !== shellOf(account)) await usermod(account.user, ['-s', shellOf(account)]);
    },

    removeUser(account) {
      // The home directory goes with the user. Berth removes the home itself: userdel -r would walk
      // the customer's files as root.
      return ctx.step('system user', async () => forgetUser(account));
    },

    endProcesses(account) {
      return ctx.step('end processes', () => endProcesses(account.user));
    },

    suspend(account) {
      return [
        ctx.step(
          'lock system user',
          () => suspendUser(account, true),
          () => suspendUser(account, false),
        ),
      ];
    },

    unsuspend(account) {
      return [
        ctx.step(
          'unlock system user',
          () => suspendUser(account, false),
          () => suspendUser(account, true),
        ),
      ];
    },

    changePassword(account, password, passwordHash) {
      let before: string | undefined;
      return [
        ctx.step(
          'password',
          async () => {
            before = shadowPassword(root, account.user);
            const hash = await systemHash(password, passwordHash);
            // A suspended account stays locked: the new hash waits behind the `!`.
            await setPasswordField(account.user, account.suspension ? `!${hash}` : hash);
          },
          async () => {
            if (before !== undefined) await setPasswordField(account.user, before);
          },
        ),
      ];
    },

    changeLimits(before, after) {
      const steps = quotaSteps(after, before);
      if (shellOf(before) !== shellOf(after)) {
        steps.push(
          ctx.step(
            'login shell',
            async () => void (await usermod(after.user, ['-s', shellOf(after)])),
            async () => void (await usermod(after.user, ['-s', shellOf(before)])),
          ),
        );
      }
      return steps;
    },

    async reconcile(account) {
      noteBase(account);
      if (!findSystemUser(root, account.user)) await addUser(account, '!');
      await usermod(account.user, ['-s', shellOf(account)]);
      const password = shadowPassword(root, account.user) ?? '';
      if (account.suspension && !password.startsWith('!')) await usermod(account.user, ['-L']);
      // A user whose password was never set stays locked: there is nothing to unlock to.
      if (!account.suspension && password.startsWith('!') && password.length > 1)
        await usermod(account.user, ['-U']);
      const owner = systemUser(account.user);
      const home = ctx.path(account.homedir);
      // A removeacct cut short may have taken the home already. Inside it, anything that is not
      // what Berth made (a link where public_html was) is left alone for doctor to report.
      const homeOwner = { uid: 0, gid: owner.gid };
      const quota = quotaOf(account);
      if (kindOf(home, []) === 'missing') await quota.makeHome(home, homeOwner, HOME_MODE);
      else settleDirectory(home, [], homeOwner, HOME_MODE);
      ensureDirectory(home, ['public_html'], publicHtmlOwner(account), PUBLIC_HTML_MODE);
      ensureGroup(account);
      // A home that cannot carry its quota (not a subvolume of its own) is doctor's to report.
      await quota.setLimit(housed(account), account.limits.quota).catch(() => {});
    },

    async purge(account) {
      // Only a user Berth made for this very domain is removed.
      if (findSystemUser(root, account.user)?.gecos === gecosOf(account)) await forgetUser(account);
    },

    async enforce(accounts: readonly Account[]) {
      for (const [name, homes] of byBackend(accounts)) await quotaBackend(ctx, name).enforce?.(homes);
    },

    async sweepQuotas(accounts) {
      for (const base of bases) {
        const homes = async () =>
          (await accounts()).filter((a) => dirname(ctx.path(a.homedir)) === base).map(housed);
        await quotaBackend(ctx, chooseQuotaBackend(linux, base)).sweep?.(base, homes);
      }
    },

    async diskUsage(accounts: readonly Account[]) {
      const found = new Map<string, number>();
      for (const [name, homes] of byBackend(accounts)) {
        const counted = await quotaBackend(ctx, name).diskUsage?.(homes);
        for (const { account, home } of homes) {
          const bytes = counted?.get(home);
          if (bytes !== undefined) found.set(account.user, bytes);
        }
      }
      return found;
    },

    async inspect(accounts) {
      const differences: string[] = [];
      for (const [name, homes] of byBackend(accounts))
        differences.push(...(await quotaBackend(ctx, name).inspect(homes)));
      for (const account of accounts) {
        const say = (what: string) => differences.push(`${account.user}: ${what}`);
        const user = findSystemUser(root, account.user);
        if (!user) say('no system user');
        else {
          if (user.home !== account.homedir) say(`system home is ${user.home}, not ${account.homedir}`);
          if (user.gecos !== gecosOf(account))
            say(`system user's GECOS is "${user.gecos}", not "${gecosOf(account)}"`);
          const locked = shadowPassword(root, account.user)?.startsWith('!') ?? false;
          if (locked !== (account.suspension !== null))
            say(
              locked
                ? 'system user locked but account active'
                : 'account suspended but system user not locked',
            );
          if (user.shell !== shellOf(account)) say(`login shell is ${user.shell}, not ${shellOf(account)}`);
        }
        if (ctx.groups && !groupExists(account.user))
          say('no control group: its processes are not bounded, nor ended together');
        const home = ctx.path(account.homedir);
        const homeKind = kindOf(home, []);
        if (homeKind !== 'directory') say(`${account.homedir} is ${describeKind(homeKind)}`);
        else {
          const publicHtml = kindOf(home, ['public_html']);
          if (publicHtml !== 'directory')
            say(`${join(account.homedir, 'public_html')} is ${describeKind(publicHtml)}`);
        }
      }
      const users = new Set(accounts.map((a) => a.user));
      for (const user of systemUsers(root))
        if (user.gecos.startsWith('Berth ') && !users.has(user.name))
          differences.push(`${user.name}: system user with no account in the store`);
      return differences;
    },
  };
}
