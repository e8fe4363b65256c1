// The socket nginx passes an account's PHP requests to (held by the activator, activator.ts).
import { createHmac, randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import type { LinuxContext } from '../context.ts';
import { makePrivateDirectory, readIfExists, writeFileAtomic } from '../files.ts';

export const POOL_PREFIX = 'berth-';

/** The keys socket names are made with, by the file each is kept in. */
const socketKeys = new Map<string, string>();

/**
 * The socket nginx passes the account's PHP requests to, named by a keyed hash of the user:
 * /proc/net/unix, which every process reads, lists every listening socket's path, and a name made
 * of the user would list the server's accounts. The key (`<php_pool_dir>/.socket-key`, 0600 in a
 * directory root's alone) is made once.
 */
export function phpSocket(ctx: LinuxContext, user: string): string {
  const file = ctx.path(join(ctx.linux.phpPoolDir, '.socket-key'));
  let key = socketKeys.get(file) ?? readIfExists(file)?.trim() ?? '';
  if (key === '') {
    key = randomBytes(32).toString('hex');
    makePrivateDirectory(dirname(file));
    writeFileAtomic(file, `${key}\n`, 0o600);
  }
  socketKeys.set(file, key);
  const name = createHmac('sha256', key).update(user).digest('hex').slice(0, 24);
  return join(ctx.linux.phpSocketDir, `${POOL_PREFIX}${name}.sock`);
}
