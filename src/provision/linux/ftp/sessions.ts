// FTP sessions into their accounts' control groups. An account's own login passes through PAM,
// whose hook moves the session into the group before the login is let through; an FTP account's
// login (PureDB) passes through no hook Pure-FTPd offers. So Berth looks, every second, for
// Pure-FTPd's processes running as an account's uid (a logged-in session drops to the account's
// user at once) outside the account's group, and moves each in: from then on the account's process
// and memory bounds count it, and suspension and removal end it with the group. Until it is moved
// (a second at most) it is outside, but it runs nothing but Pure-FTPd itself: FTP runs no command
// of the customer's, so nothing can fork from it meanwhile. Suspension also ends every process of
// the account's uid, these included.
import { readdirSync, readFileSync } from 'node:fs';
import type { Account } from '../../../store/accounts.ts';
import type { AccountGroups } from '../cgroups.ts';

/** The processes named pure-ftpd, each with its real uid and its control groups' lines. */
function pureFtpdProcesses(): { pid: number; uid: number; cgroup: string }[] {
  const found: { pid: number; uid: number; cgroup: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      if (!/^Name:\s+pure-ftpd$/m.test(status)) continue;
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1] ?? -1);
      found.push({ pid: Number(name), uid, cgroup: readFileSync(`/proc/${name}/cgroup`, 'utf8') });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * Moves each Pure-FTPd process running as an account's uid into the account's group, where it is
 * not yet; answers how many it moved. The accounts are read only when a session runs as a user
 * other than root (most seconds of most servers see none).
 */
export async function placeFtpSessions(
  groups: AccountGroups,
  accounts: () => Promise<readonly Account[]>,
  parent: string,
): Promise<number> {
  const sessions = pureFtpdProcesses().filter((process) => process.uid !== 0);
  if (sessions.length === 0) return 0;
  const byUid = new Map<number, string>();
  for (const account of await accounts()) if (account.uid !== null) byUid.set(account.uid, account.user);
  let moved = 0;
  for (const process of sessions) {
    const user = byUid.get(process.uid);
    if (!user) continue;
    // A line per hierarchy, `<id>:<controllers>:<path>`: placed when every one ends in its group.
    const paths = process.cgroup
      .split('\n')
      .filter((line) => /^\d+:(|[^:]*(pids|memory|freezer)[^:]*):/.test(line))
      .map((line) => line.slice(line.indexOf(':', line.indexOf(':') + 1) + 1));
    if (paths.length > 0 && paths.every((path) => path === `/${parent}/${user}`)) continue;
    try {
      await groups.enter(user, process.pid);
      moved++;
    } catch {
      // Ended meanwhile, or its group is gone with the account: suspension ends it by its uid.
    }
  }
  return moved;
}
