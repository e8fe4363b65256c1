// The backup repository (CONTRACT §15): Debian's restic, run by root with argv arrays alone. Its
// password is generated once into <data-dir>/backup-password (0600, root's) and handed to restic as
// that file's name, never as a value; its cache is <data-dir>/backup-cache. A repository that is a
// directory is made root's alone (0700), so that no account reads, lists or changes it. restic's own
// lock keeps two runs on one repository apart; a lock a killed run left is cleared by `unlock`,
// which removes only stale locks. The credentials of a repository elsewhere (s3:, rest:…) come from
// `backup_environment_file`, in restic's environment alone (config/backup-environment.ts).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { readBackupEnvironment } from '../../../config/backup-environment.ts';
import type { Config } from '../../../config/index.ts';
import { makePrivateDirectory, readIfExists, writeFileAtomic } from '../files.ts';
import { type CommandRunner, streamCommand } from '../run.ts';

const RESTIC = '/usr/bin/restic';
/** A first backup of a large home takes its time; a run past this is ended and tried again. */
const BACKUP_TIMEOUT_MS = 12 * 60 * 60_000;
const READ_TIMEOUT_MS = 10 * 60_000;

export interface Snapshot {
  /** restic's full id. */
  id: string;
  /** ISO time it was taken. */
  time: string;
  paths: string[];
  tags: string[];
}

export interface BackupSummary {
  snapshot: string;
  /** Bytes read from the account's files. */
  bytesProcessed: number;
  /** Bytes the repository grew by (compressed, deduplicated). */
  bytesAdded: number;
}

export interface Repository {
  readonly location: string;
  /** Makes the password and, for a directory, the repository itself, once. */
  ensure(): Promise<void>;
  /** A snapshot of `paths`, but what `excludes` names (absolute paths). */
  backup(
    paths: readonly string[],
    tags: readonly string[],
    host: string,
    excludes?: readonly string[],
  ): Promise<BackupSummary>;
  snapshots(tags: readonly string[]): Promise<Snapshot[]>;
  /** How many bytes restoring the snapshot gives. */
  size(id: string): Promise<number>;
  /** Restores what `includes` names (absolute paths as backed up) below `target`. */
  restore(id: string, target: string, includes: readonly string[]): Promise<void>;
  /** A file's content, or a directory as a tar stream. */
  dump(id: string, path: string): { output: Readable; done: Promise<void> };
  /** Forgets the snapshots of `tags` (restic's --tag: all of them) that `policy` (restic forget's --keep-* flags) does not keep. */
  keep(tags: readonly string[], policy: readonly string[]): Promise<void>;
  /** Forgets these snapshots. */
  forget(ids: readonly string[]): Promise<void>;
  /** Frees what forgotten snapshots held. */
  prune(): Promise<void>;
  /** restic's check of the repository's structure (not every byte of data): throws what it finds. */
  check(): Promise<void>;
}

/** Whether a repository location is a directory of this server's (not `sftp:`, `s3:`, `rest:`…). */
export const isLocalRepository = (location: string) => location.startsWith('/');

export function resticRepository(config: Config, runner: CommandRunner): Repository {
  const location = config.backup.repository;
  const passwordFile = join(config.dataDir, 'backup-password');
  const cacheDir = join(config.dataDir, 'backup-cache');
  const base = () => ['--repo', location, '--password-file', passwordFile, '--cache-dir', cacheDir];
  // Read at each run: a changed file (new credentials) counts from the next one.
  const env = () => readBackupEnvironment(config.backup.environmentFile);
  const restic = (args: string[], timeoutMs = READ_TIMEOUT_MS) =>
    runner.run([RESTIC, ...base(), ...args], { timeoutMs, umask: 0o077, env: env() });
  let ready: Promise<void> | null = null;

  async function ensure(): Promise<void> {
    makePrivateDirectory(config.dataDir);
    if (readIfExists(passwordFile) === null)
      writeFileAtomic(passwordFile, randomBytes(32).toString('base64url'), 0o600);
    makePrivateDirectory(cacheDir);
    if (isLocalRepository(location)) makePrivateDirectory(location);
    try {
      await restic(['cat', 'config', '--no-lock']);
    } catch {
      await restic(['init']);
    }
    // A lock left by a run that was killed would stop every later one.
    await restic(['unlock']);
  }

  return {
    location,
    ensure() {
      ready ??= ensure().catch((error: unknown) => {
        ready = null;
        throw error;
      });
      return ready;
    },

    async backup(paths, tags, host, excludes = []) {
      const { stdout } = await restic(
        [
          'backup',
          '--json',
          ...excludes.map((path) => `--exclude=${path}`),
          '--host',
          host,
          ...tags.flatMap((tag) => ['--tag', tag]),
          '--',
          ...paths,
        ],
        BACKUP_TIMEOUT_MS,
      );
      const summary = stdout
        .split('\n')
        .map((line) => {
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {
            return null;
          }
        })
        .find((line) => line?.message_type === 'summary');
      if (!summary || typeof summary.snapshot_id !== 'string') throw new Error('restic made no snapshot');
      return {
        snapshot: summary.snapshot_id,
        bytesProcessed: Number(summary.total_bytes_processed ?? 0),
        bytesAdded: Number(summary.data_added ?? 0),
      };
    },

    async snapshots(tags) {
      const filter = tags.length > 0 ? ['--tag', tags.join(',')] : [];
      const { stdout } = await restic(['snapshots', '--json', '--no-lock', ...filter]);
      const list = (JSON.parse(stdout || '[]') ?? []) as Snapshot[];
      return list
        .map(({ id, time, paths, tags: own }) => ({ id, time, paths, tags: own ?? [] }))
        .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
    },

    async size(id) {
      const { stdout } = await restic(['stats', '--json', '--no-lock', id]);
      return Number((JSON.parse(stdout) as { total_size?: number }).total_size ?? 0);
    },

    async restore(id, target, includes) {
      await restic(
        ['restore', id, '--target', target, ...includes.flatMap((path) => ['--include', path])],
        BACKUP_TIMEOUT_MS,
      );
    },

    dump(id, path) {
      return streamCommand([RESTIC, ...base(), 'dump', '--no-lock', id, path], undefined, env());
    },

    async keep(tags, policy) {
      await restic(['forget', '--tag', tags.join(','), '--group-by', 'tags', ...policy]);
    },

    async forget(ids) {
      if (ids.length > 0) await restic(['forget', '--', ...ids]);
    },

    async prune() {
      await restic(['prune'], BACKUP_TIMEOUT_MS);
    },

    async check() {
      await restic(['check'], BACKUP_TIMEOUT_MS);
    },
  };
}
