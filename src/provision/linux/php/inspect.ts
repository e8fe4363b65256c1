// What `berth doctor` finds of the php component: differences between the store's accounts and
// their pools, sockets and masters (component.ts).
import { existsSync, lstatSync } from 'node:fs';
import type { Account } from '../../../store/accounts.ts';
import { type LinuxContext, strayFiles } from '../context.ts';
import { phpSocket } from './socket.ts';

export function inspectPhp(
  ctx: LinuxContext,
  accounts: readonly Account[],
  masters: {
    poolFile(account: Account): string;
    running(user: string): boolean;
    unconfined(user: string): boolean;
  },
): string[] {
  const { linux } = ctx;
  const differences: string[] = [];
  for (const account of accounts) {
    const present = existsSync(masters.poolFile(account));
    if (!account.suspension && !present) differences.push(`${account.user}: no PHP pool`);
    if (!ctx.live) continue;
    const up = masters.running(account.user);
    if (up && account.suspension) differences.push(`${account.user}: PHP runs for a suspended account`);
    // A suspended account's socket is released: a request can start nothing.
    const held = isSocket(ctx.path(phpSocket(ctx, account.user)));
    if (!account.suspension && !held) differences.push(`${account.user}: no PHP socket is held`);
    if (account.suspension && held)
      differences.push(`${account.user}: a PHP socket is held for a suspended account`);
    if (up && masters.unconfined(account.user))
      differences.push(`${account.user}: PHP-FPM runs without Berth's seccomp filter`);
  }
  const expected = new Set(accounts.map((a) => `${a.user}.conf`));
  return [
    ...differences,
    ...strayFiles(ctx, linux.phpPoolDir, expected, '.conf', 'PHP pool', () =>
      existsSync(ctx.path(linux.phpPoolDir)),
    ),
  ];
}

function isSocket(path: string): boolean {
  try {
    return lstatSync(path).isSocket();
  } catch {
    return false;
  }
}
