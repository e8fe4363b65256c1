// How long backups are kept (CONTRACT §15, `backup_keep`): how many of the last snapshots of each
// period restic keeps, written "7 daily, 4 weekly". Nothing but what passes here reaches restic.

export const RETENTION_PERIODS = ['last', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'] as const;
export type RetentionPeriod = (typeof RETENTION_PERIODS)[number];

/** "7 daily, 4 weekly" as {daily: 7, weekly: 4}, or the reason it is not one. */
export function parseRetention(text: string): Record<string, number> | string {
  const keep: Record<string, number> = {};
  for (const part of text.split(',')) {
    const match = /^\s*([0-9]{1,4})\s+([a-z]+)\s*$/.exec(part);
    if (!match || !(RETENTION_PERIODS as readonly string[]).includes(match[2]!))
      return `"${part.trim()}" is not a count and a period (${RETENTION_PERIODS.join(', ')}), as in "7 daily, 4 weekly"`;
    if (match[2]! in keep) return `${match[2]} is given twice`;
    keep[match[2]!] = Number(match[1]);
  }
  if (Object.values(keep).every((n) => n === 0)) return 'it keeps nothing: at least one count is above 0';
  return keep;
}

export function retentionText(keep: Readonly<Record<string, number>>): string {
  return Object.entries(keep)
    .map(([period, n]) => `${n} ${period}`)
    .join(', ');
}

/** restic forget's flags for a retention: --keep-daily 7 --keep-weekly 4. */
export function retentionFlags(keep: Readonly<Record<string, number>>): string[] {
  return Object.entries(keep).flatMap(([period, n]) => [`--keep-${period}`, String(n)]);
}
