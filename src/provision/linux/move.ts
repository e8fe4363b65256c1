// An account's files on their way to another server (`berth move-account`). They are read and
// written by tar running as the account's own user (setpriv drops root first), so that whatever a
// customer planted in its home (a link to /etc/shadow, a file it made unreadable) is read and
// written with the customer's rights only, never root's. Only the account's own directories travel
// (public_html, Maildir, tmp, .ssh, the shell's home): what root made in a home (the home itself, a
// jail's system files) the new server makes anew.
import { PassThrough, type Readable } from 'node:stream';
import type { Account } from '../../store/accounts.ts';
import type { LinuxContext } from './context.ts';
import { accountDirectories } from './home.ts';
import { streamCommand } from './run.ts';
import { JAIL_ENTRIES } from './shell/component.ts';

export function asUser(ctx: LinuxContext, account: Account, argv: string[]): string[] {
  const { uid, gid } = ctx.systemUser(account.user);
  return ['/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', ...argv];
}

/** The account's own directories as a tar stream, which fails when tar could not read them all. */
export function packFiles(ctx: LinuxContext, account: Account): Readable {
  const home = ctx.path(account.homedir);
  const names = accountDirectories(home, ctx.systemUser(account.user).uid, new Set(JAIL_ENTRIES));
  const tar = streamCommand(
    asUser(ctx, account, [
      '/usr/bin/tar',
      '--create',
      '--file=-',
      `--directory=${home}`,
      '--one-file-system',
      '--numeric-owner',
      // An account with no directory of its own still gives an archive, an empty one.
      '--files-from=/dev/null',
      '--',
      ...names,
    ]),
  );
  const archive = new PassThrough();
  tar.output.pipe(archive, { end: false });
  tar.done.then(
    () => archive.end(),
    (error: unknown) => archive.destroy(error as Error),
  );
  return archive;
}

/** Unpacks an account's files into its new home, over the directories made for it here. */
export async function unpackFiles(ctx: LinuxContext, account: Account, archive: Readable): Promise<void> {
  const tar = streamCommand(
    asUser(ctx, account, [
      '/usr/bin/tar',
      '--extract',
      '--file=-',
      `--directory=${ctx.path(account.homedir)}`,
      '--preserve-permissions',
      '--no-same-owner',
    ]),
    archive,
  );
  tar.output.resume();
  await tar.done;
}
