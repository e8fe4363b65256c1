// restic's check of this server's repository (CONTRACT §15): run once after each scheduled round,
// its time and result kept in <data-dir>/backup-check.json (root's, 0600), so that `berth doctor`
// warns of a failed check, and of one that never ran or is older than the schedule allows, and
// /metrics shows both.
import { join } from 'node:path';
import { lastFiring } from '../core/cron.ts';
import { readIfExists, writeFileAtomic } from '../provision/linux/files.ts';
import type { Services } from '../services.ts';

export interface BackupCheck {
  /** When the check ended. */
  time: Date;
  ok: boolean;
  /** What restic said, when it failed. */
  error: string | null;
}

const fileOf = (dataDir: string) => join(dataDir, 'backup-check.json');

/** The last check's time and result, or null when none ran on this server. */
export function lastBackupCheck(dataDir: string): BackupCheck | null {
  const text = readIfExists(fileOf(dataDir));
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as { time?: unknown; ok?: unknown; error?: unknown };
    const time = new Date(String(parsed.time));
    if (Number.isNaN(time.getTime()) || typeof parsed.ok !== 'boolean') return null;
    return { time, ok: parsed.ok, error: typeof parsed.error === 'string' ? parsed.error : null };
  } catch {
    return null;
  }
}

/** Runs restic check on this server's repository and keeps its result; true when it passed. */
export async function checkRepository(services: Services): Promise<boolean> {
  const backups = services.driver.backups;
  if (!backups) return true;
  let error: string | null = null;
  try {
    await backups.check();
  } catch (failure) {
    error = (failure as Error).message.replace(/\s+/g, ' ').slice(0, 1000);
  }
  const time = services.now();
  writeFileAtomic(
    fileOf(services.config.dataDir),
    `${JSON.stringify({ time: time.toISOString(), ok: error === null, error })}\n`,
    0o600,
  );
  if (error === null) services.log.info({}, 'backup repository checked');
  else {
    services.metrics.backupFailure();
    services.log.warn({ error }, 'backup repository check failed');
  }
  return error === null;
}

/** How long after the schedule fires its round (backups, retention, check) may take. */
const CHECK_GRACE_MS = 12 * 60 * 60_000;

/**
 * What `berth doctor` says of the repository's check: a failure, or, once this server has made a
 * backup, no check since the round the schedule last started (allowing CHECK_GRACE_MS for it).
 */
export function backupCheckWarnings(services: Services, backedUp: boolean): string[] {
  const check = lastBackupCheck(services.config.dataDir);
  const at = (date: Date) => date.toISOString().slice(0, 16).replace('T', ' ');
  if (check && !check.ok)
    return [`backup repository: restic check failed at ${at(check.time)}: ${check.error ?? ''}`];
  const due = lastFiring(
    services.config.backup.schedule,
    new Date(services.now().getTime() - CHECK_GRACE_MS),
  );
  if (!check && backedUp)
    return ['backup repository: never checked (restic check runs after each scheduled round)'];
  if (check && due && check.time < due)
    return [
      `backup repository: last checked ${at(check.time)}, none since the round of ${at(due)} (backup_schedule ${services.config.backup.schedule})`,
    ];
  return [];
}
