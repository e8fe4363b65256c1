// Confinement of an account's processes (confine.pl, docs/linux-driver.md, Quotas): a root-owned
// Perl script that sets no_new_privs and installs a seccomp filter before it runs anything of the
// account. Whatever runs under it, and everything that forks or execs from there, can make no btrfs
// subvolume or snapshot, which would be outside the account's qgroup. PHP-FPM's master starts
// under it (php/component.ts), every cron run (cron/cron-run.sh), and it is a shell account's login
// shell, which sshd runs inside the jail (shell/component.ts writes a copy in each jail's etc).
// Perl, not a compiled helper: perl-base is essential on Debian and the jail has Perl (jailkit's
// git section), so nothing is built on the server.
import { readIfExists, writeFileAtomic } from '../files.ts';
import { render } from '../templates.ts';

/** The script, in the system and at the same path in every shell account's jail. */
export const CONFINE = '/etc/berth/confine';

/** The numbers the filter needs on each architecture Berth runs on. */
const ARCHES: Record<string, { audit: string; ioctl: number; prctl: number; x32: boolean; ipc: number[] }> = {
  // AUDIT_ARCH_X86_64; shmget, semget, msgget, mq_open.
  x64: { audit: '0xc000003e', ioctl: 16, prctl: 157, x32: true, ipc: [29, 64, 68, 240] },
  // AUDIT_ARCH_AARCH64; the same four.
  arm64: { audit: '0xc00000b7', ioctl: 29, prctl: 167, x32: false, ipc: [194, 190, 186, 180] },
};

/** The script for this server, whose login shell mode runs `shell`. */
export function confineScript(shell: string, arch: string = process.arch): string {
  const numbers = ARCHES[arch];
  if (numbers === undefined) throw new Error(`no seccomp filter is known for the architecture ${arch}`);
  return render(
    'confine/confine.pl',
    { shell, audit_arch: numbers.audit },
    {
      ioctl_nr: String(numbers.ioctl),
      prctl_nr: String(numbers.prctl),
      x32: numbers.x32 ? '1' : '0',
      ipc_nrs: numbers.ipc.join(', '),
    },
  );
}

/** Writes the script at `path` (CONFINE in the system, or in a jail's etc), 0755, when it differs. */
export function writeConfine(path: string, shell: string): void {
  const content = confineScript(shell);
  if (readIfExists(path) !== content) writeFileAtomic(path, content, 0o755);
}

/**
 * Lists CONFINE in `shells` (the system's /etc/shells, as Debian's add-shell would), since it is a
 * login shell: PAM's pam_shells refuses a user whose shell is not listed. Nothing when the system
 * has no such file.
 */
export function listShell(shells: string): void {
  const current = readIfExists(shells);
  if (current === null || current.split('\n').includes(CONFINE)) return;
  writeFileAtomic(
    shells,
    `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${CONFINE}\n`,
    0o644,
  );
}
