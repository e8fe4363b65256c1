// Reading the system's user database (below the system root) without running a command.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readParsed } from './files.ts';

export interface SystemUser {
  name: string;
  uid: number;
  gid: number;
  gecos: string;
  home: string;
  shell: string;
}

/**
 * The file's lines, split at `:`, parsed again only when the file changed (readParsed): every step
 * of a call asks for its user, and the database grows with the accounts.
 */
function lines(root: string, file: string): string[][] {
  return (
    readParsed(join(root, 'etc', file), (text) =>
      text
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('#'))
        .map((line) => line.split(':')),
    ) ?? []
  );
}

const toUser = ([name, , uid, gid, gecos, home, shell]: string[]): SystemUser => ({
  name: name ?? '',
  uid: Number(uid),
  gid: Number(gid),
  gecos: gecos ?? '',
  home: home ?? '',
  shell: shell ?? '',
});

export function systemUsers(root: string): SystemUser[] {
  return lines(root, 'passwd').map(toUser);
}

export function findSystemUser(root: string, name: string): SystemUser | undefined {
  const line = lines(root, 'passwd').find(([user]) => user === name);
  return line && toUser(line);
}

/** The password field of /etc/shadow: a hash, `!`-prefixed when locked. */
export function shadowPassword(root: string, name: string): string | undefined {
  return lines(root, 'shadow').find(([user]) => user === name)?.[1];
}

/** Every user's password field in /etc/shadow, read once (for tables naming every account). */
export function shadowPasswords(root: string): Map<string, string> {
  return new Map(lines(root, 'shadow').map(([user, hash]) => [user ?? '', hash ?? '']));
}

/** Whether the system has a user or a group of this name (useradd -U makes both). */
export function systemNameTaken(root: string, name: string): boolean {
  return findSystemUser(root, name) !== undefined || lines(root, 'group').some(([group]) => group === name);
}

/** Whether the group database has a group of this name. */
export function systemGroupExists(root: string, name: string): boolean {
  return systemGroupId(root, name) !== undefined;
}

/** The gid of the group of this name, when the group database has it. */
export function systemGroupId(root: string, name: string): number | undefined {
  const gid = lines(root, 'group').find(([group]) => group === name)?.[2];
  return gid === undefined ? undefined : Number(gid);
}

/** Every uid and gid the user and group databases hold, and each user's uid by name. */
export function systemIds(root: string): { users: Map<string, number>; ids: number[] } {
  const users = systemUsers(root);
  const gids = lines(root, 'group').map(([, , gid]) => Number(gid));
  return {
    users: new Map(users.map((user) => [user.name, user.uid])),
    ids: [...users.map((user) => user.uid), ...gids].filter(Number.isInteger),
  };
}

/** Whether any process runs as this uid (read from /proc, not a command). */
export function processOf(uid: number): boolean {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(real) === uid) return true;
    } catch {
      // ended meanwhile
    }
  }
  return false;
}

/** The users /etc/group lists as members of a group (their supplementary groups). */
export function systemGroupMembers(root: string, group: string): string[] {
  const members = lines(root, 'group').find(([name]) => name === group)?.[3] ?? '';
  return members.split(',').filter(Boolean);
}
