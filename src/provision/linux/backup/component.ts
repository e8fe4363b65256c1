// Backups of the accounts on this server (CONTRACT §15), in the restic repository of restic.ts.
//
// A snapshot holds the account's home, read by restic as root without following any link in it
// (restic stores a link as a link), but for the system directories of a shell's jail, and beside it a
// directory of root's, <data-dir>/backup-staging/<user>, with the account's record and objects
// from the store (account.json, with the password hashes a removed account is made again with),
// its zones, and whatever each kind of object adds (BackupPart: a database dump). Snapshots are
// tagged `user:<user>` and `server:<server>`; every read names the user's tag, so that one
// account's snapshot id never reaches another's data.
//
// A restore never writes as root in a home: restic restores the snapshot into a fresh staging
// directory root alone may enter (or, for a snapshot another server's repository holds, tar
// extracts there what that server's `parts` restored from it: backups.ts of the fleet), tar
// reads what was asked for there, and tar running as the
// account's own user (setpriv) writes it into the home; what the request names is first removed
// from the home through home.ts's helpers, which never follow a link. A link the holder planted on
// the way to a path asked for refuses the restore; one in place of what is restored is removed,
// never followed; and whatever the holder changes meanwhile, the writes are the account's own,
// which reach nothing outside what the account may write anyway.
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { retentionFlags } from '../../../core/retention.ts';
import type { Account } from '../../../store/accounts.ts';
import type { AccountObjects } from '../../../store/objects.ts';
import { type Backups, type RestoreRequest, StepRefused } from '../../driver.ts';
import type { LinuxContext } from '../context.ts';
import { domainFile, makePrivateDirectory, moveSystemPath, readIfExists, writeFileAtomic } from '../files.ts';
import { ensureDirectory, kindOf, removeHome, removeTree } from '../home.ts';
import { asUser } from '../move.ts';
import { streamCommand } from '../run.ts';
import { JAIL_ENTRIES } from '../shell/component.ts';
import { type Repository, resticRepository, type Snapshot } from './restic.ts';

/** The names directly in a home that hold mail: the account's own Maildir and its mailboxes'. */
export const MAIL_NAMES = new Set(['Maildir', 'mail']);

/**
 * What a kind of object adds to a snapshot beside the files (a database's dump) and puts back
 * from it. `dir` is a directory of root's: below it the kind keeps what it wrote, under its name.
 */
export interface BackupPart {
  /** Its directory's name in the snapshot, and what `restoreacct what=` names it by. */
  name: 'databases';
  collect(account: Account, objects: AccountObjects, dir: string): Promise<void>;
  /**
   * What `restore` would put back, by name; a StepRefused for what it would not (an object the
   * account no longer has, one the snapshot lacks), before anything changes.
   */
  check(account: Account, objects: AccountObjects, dir: string, name?: string): string[];
  /** Puts back everything it collected, or the one object `name` names. */
  restore(account: Account, objects: AccountObjects, dir: string, name?: string): Promise<void>;
}

export interface BackupComponent extends Backups {
  readonly repository: Repository;
}

export function backupComponent(ctx: LinuxContext, parts: readonly BackupPart[] = []): BackupComponent {
  const { config } = ctx;
  const repository = resticRepository(config, ctx.runner);
  const stagingRoot = join(config.dataDir, 'backup-staging');
  const restoreRoot = join(config.dataDir, 'restore-staging');
  const tags = (user: string) => [`user:${user}`];
  const metaDir = (user: string) => join(stagingRoot, user);
  const sizes = new Map<string, number>();

  async function own(user: string, id: string): Promise<Snapshot> {
    await repository.ensure();
    const found = (await repository.snapshots(tags(user))).find((s) => s.id === id);
    if (!found) throw new Error(`${user} has no snapshot ${id}`);
    return found;
  }
  /** The snapshot's home: the path beside its directory of root's. */
  const homeOf = (snapshot: Snapshot, user: string) => {
    const home = snapshot.paths.find((path) => path !== metaDir(user));
    if (!home) throw new Error(`snapshot ${snapshot.id} holds no home`);
    return home;
  };

  /** Copies `components` of the staged home into the account's home, as the account's user. */
  async function copyIn(account: Account, staged: string, components: readonly string[]): Promise<void> {
    const relative = components.join('/');
    const pack = streamCommand([
      '/usr/bin/tar',
      '--create',
      '--file=-',
      `--directory=${staged}`,
      '--numeric-owner',
      '--',
      relative,
    ]);
    const unpack = streamCommand(
      asUser(ctx, account, [
        '/usr/bin/tar',
        '--extract',
        '--file=-',
        `--directory=${ctx.path(account.homedir)}`,
        '--preserve-permissions',
        '--no-same-owner',
      ]),
      pack.output,
    );
    unpack.output.resume();
    await Promise.all([pack.done, unpack.done]);
  }

  /**
   * What root made directly in a home for a shell's jail (its system directories, a /proc mounted
   * there): the system makes them again, and they are not the account's to keep.
   */
  const systemEntries = (home: string): string[] =>
    [...JAIL_ENTRIES, 'proc'].filter((name) => {
      try {
        return lstatSync(join(home, name)).uid === 0;
      } catch {
        return false;
      }
    });

  /** Directories of root's directly in a directory (none through a link), by name. */
  const rootDirectories = (dir: string): string[] => {
    try {
      return readdirSync(dir).filter((name) => {
        const stat = lstatSync(join(dir, name));
        return stat.isDirectory() && stat.uid === 0;
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  };

  /** Entries directly in a directory that are an account's (not root's), by name. */
  const accountEntries = (dir: string): string[] => {
    try {
      return readdirSync(dir).filter((name) => lstatSync(join(dir, name)).uid !== 0);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
  };

  /**
   * Puts `components` back as the staged home has it: removed from the home (nothing followed),
   * then copied in when the snapshot has it. A link on the way is refused.
   */
  async function put(account: Account, staged: string, components: readonly string[]): Promise<void> {
    const home = ctx.path(account.homedir);
    for (let i = 1; i < components.length; i++) {
      const kind = kindOf(home, components.slice(0, i));
      if (kind === 'link' || kind === 'file' || kind === 'other')
        throw new StepRefused('path', `${components.slice(0, i).join('/')} is not a directory of the home`);
    }
    // What root keeps directly in the home (logs, a jail's run, bin, home …) and what is in it is
    // not the account's to have back: restored, it would become the account's. A jail's home of
    // the account (home/<user>) is the account's.
    let first: ReturnType<typeof lstatSync> | null = null;
    try {
      first = lstatSync(join(home, components[0]!));
    } catch {
      first = null;
    }
    const ownJailHome = components[0] === 'home' && components[1] === account.user;
    if (first !== null && !first.isSymbolicLink() && first.uid === 0 && !ownJailHome)
      throw new StepRefused('path', `${components.join('/')} is the system's in the home, not restored`);
    let stat: ReturnType<typeof lstatSync> | null = null;
    try {
      stat = lstatSync(join(staged, ...components));
    } catch {
      stat = null;
    }
    // A directory directly in the home (public_html, mail), or in a directory of root's there (the
    // shell's home in a jail), keeps its place and the group the system gave it (the web server's):
    // what is in it goes, and then the snapshot's content comes. The account could not make it.
    const rootsParent = () => {
      try {
        return lstatSync(join(home, components[0]!)).uid === 0;
      } catch {
        return false;
      }
    };
    const top =
      stat?.isDirectory() === true && (components.length === 1 || (components.length === 2 && rootsParent()));
    if (top && kindOf(home, components) === 'directory')
      for (const name of readdirSync(join(home, ...components)))
        await removeTree(home, [...components, name]);
    else await removeTree(home, components);
    if (!stat) return;
    if (top) {
      const { uid, gid } = ctx.systemUser(account.user);
      const web = ctx.systemUser(config.linux.webUser).gid;
      const group = stat.gid === web ? web : gid;
      if (ensureDirectory(home, components, { uid, gid: group }, stat.mode & 0o7777) !== 'directory')
        throw new StepRefused('path', `${components.join('/')} is not a directory of the home`);
    }
    await copyIn(account, staged, components);
  }

  /** A new directory of root's alone below restoreRoot, for one restore's staged parts. */
  function freshStage(user: string): string {
    makePrivateDirectory(restoreRoot);
    const stage = join(restoreRoot, `${user}-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`);
    makePrivateDirectory(stage);
    return stage;
  }

  /**
   * Restores what `request` needs of the snapshot into `stage`, as `home` (what of the home it
   * names) and `meta` (the record, zones and parts), whatever paths the snapshot had them at.
   */
  async function stageParts(
    snapshot: Snapshot,
    user: string,
    stage: string,
    request: RestoreRequest,
  ): Promise<void> {
    const oldHome = homeOf(snapshot, user);
    const wanted = request.path ? join(oldHome, ...request.path) : oldHome;
    const includes = request.what === 'databases' ? [metaDir(user)] : [wanted, metaDir(user)];
    const restored = join(stage, 'restic');
    makePrivateDirectory(restored);
    await repository.restore(snapshot.id, restored, includes);
    for (const [from, to] of [
      [oldHome, 'home'],
      [metaDir(user), 'meta'],
    ] as const)
      moveSystemPath(join(restored, from), join(stage, to));
    await removeHome(restored);
  }

  /**
   * Extracts the parts another server's repository gave (`parts` there) into `stage`, as root in a
   * directory no one else may enter: owners and modes as they were, for the copy-in that follows.
   * GNU tar keeps every name below the directory (no absolute name, no ..) and makes a link that
   * could lead out only once every file is written.
   */
  async function unpackParts(input: Readable, stage: string): Promise<void> {
    const { output, done } = streamCommand(
      [
        '/usr/bin/tar',
        '--extract',
        '--file=-',
        `--directory=${stage}`,
        '--numeric-owner',
        '--same-owner',
        '--preserve-permissions',
      ],
      input,
    );
    output.resume();
    await done;
  }

  /** What a request names, as paths below the home; `staged` lists the snapshot's. */
  function targets(account: Account, staged: string, request: RestoreRequest): string[][] {
    if (request.path) return [[...request.path]];
    const home = ctx.path(account.homedir);
    const names = new Set<string>();
    if (request.what === 'all' || request.what === 'files') {
      for (const name of [...accountEntries(staged), ...accountEntries(home)])
        if (!MAIL_NAMES.has(name)) names.add(name);
      // In a directory of root's directly in the home (a jail's `home`), the account's own (the
      // shell's home).
      const skip = new Set(systemEntries(home));
      for (const dir of new Set([...rootDirectories(staged), ...rootDirectories(home)]))
        if (!skip.has(dir))
          for (const name of new Set([
            ...accountEntries(join(staged, dir)),
            ...accountEntries(join(home, dir)),
          ]))
            names.add(`${dir}/${name}`);
    }
    if (request.what === 'all' || request.what === 'mail') {
      if (request.email) {
        const [local, domain] = [request.email.split('@')[0]!, request.email.split('@')[1]!];
        return [account.domain === domain && local === account.user ? ['Maildir'] : ['mail', domain, local]];
      }
      for (const name of MAIL_NAMES) names.add(name);
    }
    return [...names].sort().map((name) => name.split('/'));
  }

  return {
    repository,

    async backup(account, objects, record) {
      await repository.ensure();
      const meta = metaDir(account.user);
      makePrivateDirectory(stagingRoot);
      await removeHome(meta);
      makePrivateDirectory(meta);
      try {
        writeFileAtomic(join(meta, 'account.json'), record, 0o600);
        const domains = new Set([account.domain, ...objects.domains.map((d) => d.domain)]);
        for (const domain of domains) {
          const zone = readIfExists(ctx.path(join(config.linux.zoneDir, domainFile(domain, '.db'))));
          if (zone !== null) writeFileAtomic(join(meta, 'zones', `${domain}.db`), zone, 0o600);
        }
        for (const part of parts) {
          makePrivateDirectory(join(meta, part.name));
          await part.collect(account, objects, join(meta, part.name));
        }
        const home = ctx.path(account.homedir);
        return await repository.backup(
          [home, meta],
          [...tags(account.user), `server:${config.nodeName}`],
          config.nodeName,
          systemEntries(home).map((name) => join(home, name)),
        );
      } finally {
        await removeHome(meta);
      }
    },

    async snapshots(user) {
      await repository.ensure();
      return (await repository.snapshots(tags(user))).map(({ id, time }) => ({ id, time }));
    },

    async size(snapshot) {
      // A snapshot never changes: its size is asked of restic once.
      let size = sizes.get(snapshot);
      if (size === undefined) {
        size = await repository.size(snapshot);
        sizes.set(snapshot, size);
      }
      return size;
    },

    async record(user, id) {
      const snapshot = await own(user, id);
      const { output, done } = repository.dump(snapshot.id, join(metaDir(user), 'account.json'));
      const chunks: Buffer[] = [];
      for await (const chunk of output) chunks.push(chunk as Buffer);
      await done;
      return Buffer.concat(chunks).toString('utf8');
    },

    async homeArchive(user, id): Promise<Readable> {
      const snapshot = await own(user, id);
      const { output, done } = repository.dump(snapshot.id, homeOf(snapshot, user));
      done.catch((error: unknown) => output.destroy(error as Error));
      return output;
    },

    async restore(account, objects, id, request, held) {
      const restoring = parts.filter((p) => request.what === 'all' || p.name === request.what);
      if (request.what === 'databases' && restoring.length === 0)
        throw new StepRefused('what', 'this server keeps no databases in its backups');
      // The snapshot is the account's own here, or was found so by the server that holds it.
      const snapshot = held ? null : await own(account.user, id);
      const stage = freshStage(account.user);
      try {
        if (snapshot) await stageParts(snapshot, account.user, stage, request);
        else await unpackParts(await held!.parts(), stage);
        // From here on, one restore whichever repository the snapshot came from.
        const staged = join(stage, 'home');
        const partDir = (part: BackupPart) => join(stage, 'meta', part.name);
        // What a part would refuse is refused before any file is put back.
        for (const part of restoring) part.check(account, objects, partDir(part), request.database);
        if (request.what !== 'databases')
          for (const components of targets(account, staged, request)) await put(account, staged, components);
        for (const part of restoring) await part.restore(account, objects, partDir(part), request.database);
      } finally {
        await removeHome(stage);
      }
    },

    async parts(user, id, request) {
      const snapshot = await own(user, id);
      const stage = freshStage(user);
      try {
        await stageParts(snapshot, user, stage, request);
      } catch (error) {
        await removeHome(stage);
        throw error;
      }
      const names = ['home', 'meta'].filter((name) => existsSync(join(stage, name)));
      const { output, done } = streamCommand([
        '/usr/bin/tar',
        '--create',
        '--file=-',
        `--directory=${stage}`,
        '--numeric-owner',
        '--',
        ...names,
      ]);
      done
        .catch((error: unknown) => output.destroy(error as Error))
        .finally(() => removeHome(stage))
        .catch(() => {});
      return output;
    },

    async applyRetention(accounts, now) {
      await repository.ensure();
      const all = await repository.snapshots([]);
      const byUser = new Map<string, Snapshot[]>();
      for (const snapshot of all) {
        const user = snapshot.tags.find((tag) => tag.startsWith('user:'))?.slice(5);
        if (user) byUser.set(user, [...(byUser.get(user) ?? []), snapshot]);
      }
      const expired = now.getTime() - config.backup.keepRemovedDays * 24 * 60 * 60_000;
      let forgot = false;
      for (const [user, snapshots] of byUser) {
        if (accounts.has(user)) {
          await repository.keep(tags(user), retentionFlags(config.backup.keep));
          forgot = true;
        } else if (Date.parse(snapshots.at(-1)!.time) < expired) {
          await repository.forget(snapshots.map((s) => s.id));
          forgot = true;
        }
      }
      if (forgot) await repository.prune();
    },

    async check() {
      await repository.ensure();
      await repository.check();
    },
  };
}
