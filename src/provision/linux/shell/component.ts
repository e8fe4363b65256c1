// The shell component: SSH and SFTP with the account's password, chrooted by OpenSSH to the
// account's home (which is root's, as ChrootDirectory requires; public_html, Maildir, tmp and the
// shell's own home inside it are the account's). shell=on: a jail in the home, hard-linked (on
// btrfs reflinked, its usr a read-only snapshot) from a template that Debian's jailkit builds once
// (a shell, coreutils, PHP's command line, git, rsync), with an /etc of its own that names only root and the account: no
// other home, no /etc/shadow, and a /proc that each session mounts for itself, showing the
// account's processes alone. shell=off: SFTP alone (ForceCommand internal-sftp). Which rules apply
// is group membership (berth-shell, berth-sftp, berth-suspended), so sshd's configuration never
// changes per account. Every session enters the account's control group through Berth's PAM hook
// (account-session.sh). A shell account's login shell is Berth's confinement (confine/confine.ts),
// a copy of which each jail has: its sessions make no btrfs subvolume, nor SysV IPC objects or
// POSIX message queues (which an IPC namespace of the session's own would keep apart, but none can
// be made for it: sshd's PAM modules run none in-process, and a chroot cannot make a user
// namespace).
import { existsSync, lstatSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { phpVersion } from '../../../config/linux.ts';
import type { Account } from '../../../store/accounts.ts';
import { CONFINE, listShell, writeConfine } from '../confine/confine.ts';
import type { Component, LinuxContext } from '../context.ts';
import { readIfExists, writeFileAtomic } from '../files.ts';
import { convertToSubvolume, isSubvolume, onBtrfs, removeTree, snapshotReadOnly } from '../filesystems.ts';
import { ensureDirectory, kindOf, rootAloneWrites } from '../home.ts';
import { type SystemUser, systemGroupMembers } from '../passwd.ts';
import { render } from '../templates.ts';

export const SHELL_GROUP = 'berth-shell';
export const SFTP_GROUP = 'berth-sftp';
export const SUSPENDED_GROUP = 'berth-suspended';

/** What a jail holds besides the account's own files: hard links of the template's top level. */
export const JAIL_ENTRIES = ['bin', 'dev', 'etc', 'lib', 'lib64', 'usr'];
const JAILKIT_SECTIONS = ['basicshell', 'extendedshell', 'editors', 'git', 'rsync', 'scp', 'sftp'];
/** What a developer expects beyond jailkit's sections, where this server has it. */
const EXTRA_TOOLS = [
  '/usr/bin/ps',
  '/usr/bin/id',
  '/usr/bin/whoami',
  '/usr/bin/env',
  '/usr/bin/du',
  '/usr/bin/find',
  '/usr/bin/xargs',
  '/usr/bin/tar',
  '/usr/bin/gzip',
  '/usr/bin/zip',
  '/usr/bin/unzip',
  '/usr/bin/curl',
  // MariaDB's client: the socket is bound into the jail at each session (account-session.sh).
  '/usr/bin/mariadb',
  '/usr/bin/mysql',
  '/usr/bin/composer',
  '/usr/share/zoneinfo/UTC',
  '/etc/ssl/certs',
  '/dev/zero',
  '/dev/tty',
];

/** Berth's login hook, which PAM runs when sshd opens a session (account-session.sh). */
export const SESSION_HOOK = '/etc/berth/account-session';
/** pam_namespace's entry that gives a shell account's session a mount namespace of its own. */
const NAMESPACE_CONF = '/etc/security/namespace.d/berth.conf';
const PAM_BLOCK = /# BEGIN Berth[^\n]*\n[\s\S]*?# END Berth\n/;

export interface ShellComponent extends Component {
  /**
   * The groups whose sshd rules apply to the account (suspended or not: `suspended`, else as it is),
   * which useradd gives it at createacct and the user component's lock at suspension.
   */
  groupsOf(account: Account, suspended?: boolean): string[];
}

export function shellComponent(ctx: LinuxContext): ShellComponent {
  const { linux, runner, prefix, root } = ctx;
  const usermod = (user: string, args: string[]) =>
    runner.run(['/usr/sbin/usermod', ...prefix, ...args, '--', user]);
  const groupsOf = (account: Account, suspended = account.suspension !== null) => [
    account.shellEnabled ? SHELL_GROUP : SFTP_GROUP,
    ...(suspended ? [SUSPENDED_GROUP] : []),
  ];
  const { systemUser } = ctx;
  const jailed = (account: Account) => kindOf(ctx.path(account.homedir), ['usr']) === 'directory';

  async function ensureGroups(): Promise<void> {
    for (const group of [SHELL_GROUP, SFTP_GROUP, SUSPENDED_GROUP])
      await runner.run(['/usr/sbin/groupadd', ...prefix, '-f', '-r', '--', group]);
  }

  /** The jail template, built by jailkit the first time it is needed (some seconds). */
  async function ensureTemplate(): Promise<string> {
    const template = ctx.path(linux.jailTemplate);
    if (!existsSync(join(template, 'usr'))) await buildTemplate(template);
    // On btrfs the template's usr (nine in ten of its files) is a subvolume, which each jail gets
    // as a read-only snapshot: no file of it is counted in the account's quota, metadata included.
    if (onBtrfs(template)) await convertToSubvolume(runner, join(template, 'usr'));
    return template;
  }

  async function buildTemplate(template: string): Promise<void> {
    // Everyone in a jail reads its system files: jailkit must not make them under Berth's umask.
    const umask = 0o022;
    // jailkit reads the libraries of every file it copies: minutes on a busy server.
    const timeoutMs = 10 * 60_000;
    await runner.run(['/usr/sbin/jk_init', '-k', '-j', template, ...JAILKIT_SECTIONS], { umask, timeoutMs });
    const php = phpVersion();
    const extras = [
      `/usr/bin/php${php}`,
      '/usr/bin/php',
      `/etc/php/${php}/cli`,
      `/etc/php/${php}/mods-available`,
      '/usr/lib/php',
      ...EXTRA_TOOLS,
    ].filter((path) => existsSync(ctx.path(path)));
    await runner.run(['/usr/sbin/jk_cp', '-k', '-j', template, ...extras], { umask, timeoutMs });
  }

  /** Sets the account's groups whole (which sshd rules apply to it); undone to `before`. */
  const groupsStep = (account: Account, before: string[]) =>
    ctx.step(
      'SSH access',
      // The groups are the server's, made when Berth starts (prepare).
      async () => void (await usermod(account.user, ['-G', groupsOf(account).join(',')])),
      async () => void (await usermod(account.user, ['-G', before.join(',')])),
    );

  function jailEtc(account: Account, owner: SystemUser): void {
    const home = ctx.path(account.homedir);
    const etc = join(home, 'etc');
    // etc is the jail's own (made just now or earlier by this component), root's, never a link.
    if (kindOf(home, ['etc']) !== 'directory' || lstatSync(etc).uid !== 0)
      throw new Error(`${join(account.homedir, 'etc')} is not the jail's`);
    writeFileAtomic(
      join(etc, 'passwd'),
      `root:x:0:0:root:/root:/bin/bash\n${account.user}:x:${owner.uid}:${owner.gid}::${account.homedir}:/bin/bash\n`,
      0o644,
    );
    writeFileAtomic(join(etc, 'group'), `root:x:0:\n${account.user}:x:${owner.gid}:\n`, 0o644);
    jailConfine(account);
  }

  /**
   * The account's login shell, Berth's confinement, at its own path in the jail: sshd runs it after
   * chroot. The jail's etc is root's alone (jailEtc checks it).
   */
  function jailConfine(account: Account): void {
    const home = ctx.path(account.homedir);
    if (ensureDirectory(home, ['etc', 'berth'], { uid: 0, gid: 0 }, 0o755) !== 'directory')
      throw new Error(`${join(account.homedir, 'etc', 'berth')} is not the jail's`);
    writeConfine(join(home, CONFINE), ctx.config.shell);
  }

  /**
   * The jail's entries are made with plain paths (cp, the jail's /etc), which is safe only in a
   * home the customer cannot write: a link planted there between a check and cp would be followed.
   */
  function jailHome(account: Account): string {
    const home = ctx.path(account.homedir);
    if (!rootAloneWrites(home))
      throw new Error(`${account.homedir} is not root's alone: no jail is made or removed in it`);
    return home;
  }

  /**
   * The login hook and PAM's part: every session of an account enters its control group; a shell
   * account's session gets a mount namespace of its own (pam_namespace: a tmpfs at the jail's
   * proc, so that it unshares), where the hook mounts a /proc that shows the account alone.
   */
  function prepareSessions(): void {
    const enter = (ctx.groups?.parents ?? []).map((dir) => `  echo "$PPID" >"${dir}/$user/cgroup.procs"`);
    writeFileAtomic(
      ctx.path(SESSION_HOOK),
      render(
        'shell/account-session.sh',
        { shell_group: SHELL_GROUP, sftp_group: SFTP_GROUP, mariadb_dir: dirname(linux.mariadbSocket) },
        { enter_groups: enter.length > 0 ? enter.join('\n') : '  :' },
      ),
      0o755,
    );
    writeFileAtomic(
      ctx.path(NAMESPACE_CONF),
      "# Berth: a shell account's SSH session has a mount namespace of its own (docs/linux-driver.md).\n$HOME/proc none tmpfs root\n",
      0o644,
    );
    const pam = ctx.path(linux.pamSshd);
    const current = readIfExists(pam);
    if (current === null) return;
    const block = render('shell/pam-sshd.conf', { hook: SESSION_HOOK, shell_group: SHELL_GROUP });
    const next = PAM_BLOCK.test(current)
      ? current.replace(PAM_BLOCK, block)
      : `${current.endsWith('\n') ? current : `${current}\n`}${block}`;
    if (next !== current) writeFileAtomic(pam, next, 0o644);
  }

  async function buildJail(account: Account): Promise<void> {
    const template = await ensureTemplate();
    const home = jailHome(account);
    const owner = systemUser(account.user);
    // The home is root's, so only root can have made these names; a leftover jail is made anew.
    for (const name of [...JAIL_ENTRIES, 'proc', 'run']) {
      if (ownerOf(home, name) === 0) await removeTree(runner, join(home, name));
      else if (ownerOf(home, name) !== null)
        throw new Error(`${join(account.homedir, name)} is in the jail's way`);
    }
    let entries = JAIL_ENTRIES.filter((name) => ownerOf(template, name) !== null);
    const btrfs = onBtrfs(home);
    if (btrfs && isSubvolume(join(template, 'usr'))) {
      await snapshotReadOnly(runner, join(template, 'usr'), join(home, 'usr'));
      entries = entries.filter((name) => name !== 'usr');
    }
    // Hard links cannot leave a btrfs subvolume (a home is one there, for its quota): reflink
    // copies share the template's extents instead, so the jail's data takes none of the quota.
    const copy = btrfs ? ['-a', '--reflink=auto'] : ['-al'];
    await runner.run(['/usr/bin/cp', ...copy, '--', ...entries.map((name) => join(template, name)), home]);
    jailEtc(account, owner);
    // Where each session's own /proc is mounted (account-session.sh): in the system, an empty directory.
    ensureDirectory(home, ['proc'], { uid: 0, gid: 0 }, 0o555);
    // Where each session binds MariaDB's socket directory (account-session.sh).
    ensureDirectory(home, ['run'], { uid: 0, gid: 0 }, 0o755);
    // The shell's home inside the jail: <home>/home/<user>, seen there as the home's own path.
    ensureDirectory(home, ['home'], { uid: 0, gid: 0 }, 0o755);
    ctx.accountDirectory(account, ['home', account.user], 0o700);
  }

  async function removeJail(account: Account): Promise<void> {
    const home = jailHome(account);
    for (const name of [...JAIL_ENTRIES, 'proc', 'run'])
      if (ownerOf(home, name) === 0) await removeTree(runner, join(home, name));
  }

  const jailStep = (account: Account, make: boolean) =>
    ctx.step(
      make ? 'jail' : 'remove jail',
      async () => (make ? buildJail(account) : removeJail(account)),
      async () => (make ? removeJail(account) : buildJail(account)),
    );

  const sshDirStep = (account: Account) =>
    ctx.step('SSH keys directory', async () => {
      if (
        ensureDirectory(ctx.path(account.homedir), ['.ssh'], systemUser(account.user), 0o700) !== 'directory'
      )
        throw new Error(`${join(account.homedir, '.ssh')} is not a directory`);
    });

  return {
    name: 'shell',

    async prepare() {
      await ensureGroups();
      prepareSessions();
      writeConfine(ctx.path(CONFINE), ctx.config.shell);
      listShell(ctx.path('/etc/shells'));
      const file = ctx.path(linux.sshdConfig);
      const content = render('shell/sshd.conf', {
        shell_group: SHELL_GROUP,
        sftp_group: SFTP_GROUP,
        suspended_group: SUSPENDED_GROUP,
      });
      if (readIfExists(file) !== content) {
        writeFileAtomic(file, content, 0o644);
        // An sshd already running reads it again; one not running yet will read it when it starts.
        if (ctx.live && linux.reloadSsh.length > 0) await runner.run(linux.reloadSsh).catch(() => {});
      }
      if (ctx.live) await ensureTemplate();
    },

    groupsOf,
    // The user is made in its groups (useradd -G): no login is ever without its rules.
    create: (account) => [sshDirStep(account), ...(account.shellEnabled ? [jailStep(account, true)] : [])],
    // Suspension's groups are set by the user component, in the usermod that locks the password.
    changeLimits(before, after) {
      if (before.shellEnabled === after.shellEnabled) return [];
      return [groupsStep(after, groupsOf(before)), jailStep(after, after.shellEnabled)];
    },

    async reconcile(account) {
      await ensureGroups();
      await groupsStep(account, []).run();
      await sshDirStep(account).run();
      if (account.shellEnabled && kindOf(ctx.path(account.homedir), ['usr']) !== 'directory')
        await buildJail(account);
      else if (account.shellEnabled) jailEtc(account, systemUser(account.user));
      if (!account.shellEnabled) await removeJail(account);
    },

    // A jail made before shells were confined gets its login shell.
    async resume(account) {
      if (account.shellEnabled && jailed(account)) jailConfine(account);
    },

    inspect(accounts) {
      const differences: string[] = [];
      const pam = readIfExists(ctx.path(linux.pamSshd));
      if (accounts.length > 0 && pam !== null && !PAM_BLOCK.test(pam))
        differences.push(
          `${linux.pamSshd} lacks Berth's block: SSH sessions run outside the accounts' control groups`,
        );
      const members = (group: string) => new Set(systemGroupMembers(root, group));
      const groups = new Map([SHELL_GROUP, SFTP_GROUP, SUSPENDED_GROUP].map((g) => [g, members(g)]));
      for (const account of accounts) {
        const expected = groupsOf(account);
        for (const [group, users] of groups)
          if (users.has(account.user) !== expected.includes(group))
            differences.push(
              `${account.user}: ${users.has(account.user) ? 'in' : 'not in'} the group ${group}`,
            );
        const hasJail = jailed(account);
        if (account.shellEnabled && !hasJail) differences.push(`${account.user}: shell on but no jail`);
        if (!account.shellEnabled && hasJail) differences.push(`${account.user}: shell off but a jail`);
        if (
          account.shellEnabled &&
          hasJail &&
          readIfExists(join(ctx.path(account.homedir), CONFINE)) === null
        )
          differences.push(`${account.user}: its jail lacks ${CONFINE}, its login shell`);
      }
      return differences;
    },
  };
}

/** The owner of `<dir>/<name>` itself (a link is not followed), or null when there is none. */
function ownerOf(dir: string, name: string): number | null {
  try {
    return lstatSync(join(dir, name)).uid;
  } catch {
    return null;
  }
}
