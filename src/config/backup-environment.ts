// `backup_environment_file` (docs/backups.md): the credentials restic needs for a repository that
// is not a directory (s3:, rest:, sftp:, b2:, azure:, gs:, swift:), as KEY=VALUE lines in a file
// of root's that no one else may read. Its values reach restic in its environment alone: never on
// a command line (every account reads /proc/*/cmdline), never in a log or an error message, which
// name a line's number and key at most.
import { lstatSync, readFileSync } from 'node:fs';
import type { Config } from './settings.ts';
import { ConfigError } from './settings.ts';

/** The names restic and the storage it reaches read: its own and its back ends' credentials. */
const ALLOWED = /^(RESTIC|AWS|B2|AZURE|GOOGLE|OS|ST)_[A-Z0-9_]+$/;
/** What Berth itself gives restic on its command line (repository, password, cache). */
const BERTH_OWN = new Set([
  'RESTIC_REPOSITORY',
  'RESTIC_REPOSITORY_FILE',
  'RESTIC_PASSWORD',
  'RESTIC_PASSWORD_FILE',
  'RESTIC_PASSWORD_COMMAND',
  'RESTIC_CACHE_DIR',
]);

/**
 * The variables of the file (none without one), or a ConfigError naming the file and why: it is
 * not a regular file of root's (of the user Berth runs as) that group and others cannot read, or
 * a line is not KEY=VALUE with a name restic's back ends read.
 */
export function readBackupEnvironment(path: string | null): Record<string, string> {
  if (path === null) return {};
  let stat: ReturnType<typeof lstatSync>;
  try {
    stat = lstatSync(path);
  } catch (error) {
    throw new ConfigError(`backup_environment_file ${path}: ${(error as NodeJS.ErrnoException).code}`);
  }
  if (!stat.isFile()) throw new ConfigError(`backup_environment_file ${path}: not a regular file`);
  const owner = process.getuid?.() ?? 0;
  if (stat.uid !== owner)
    throw new ConfigError(`backup_environment_file ${path}: owned by uid ${stat.uid}, not ${owner}`);
  if ((stat.mode & 0o077) !== 0)
    throw new ConfigError(
      `backup_environment_file ${path}: mode 0${(stat.mode & 0o777).toString(8)} lets others read it (chmod 600)`,
    );
  const environment: Record<string, string> = {};
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || line.trimStart().startsWith('#')) return;
    const where = `backup_environment_file ${path} line ${i + 1}`;
    const equals = line.indexOf('=');
    if (equals <= 0) throw new ConfigError(`${where}: not KEY=VALUE`);
    const key = line.slice(0, equals).trim();
    if (!ALLOWED.test(key))
      throw new ConfigError(
        `${where}: ${key.slice(0, 64)} is not a variable restic's back ends read (RESTIC_, AWS_, B2_, AZURE_, GOOGLE_, OS_, ST_)`,
      );
    if (BERTH_OWN.has(key)) throw new ConfigError(`${where}: ${key} is Berth's own to give restic`);
    if (key in environment) throw new ConfigError(`${where}: ${key} is set twice`);
    environment[key] = line.slice(equals + 1);
  });
  return environment;
}

/** Start-up and `berth doctor`: the file's problem, or null when it is usable (or there is none). */
export function backupEnvironmentProblem(config: Config): string | null {
  try {
    readBackupEnvironment(config.backup.environmentFile);
    return null;
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}
