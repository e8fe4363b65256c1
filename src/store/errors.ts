// Recognises the store's own refusals, whatever the dialect says them in.

/** The column whose uniqueness an insert or update broke, or null for any other error. */
export function uniqueViolation(error: unknown): string | null {
  const message = error instanceof Error ? error.message : '';
  // SQLite: "UNIQUE constraint failed: accounts.domain"
  const sqlite = /UNIQUE constraint failed: \w+\.(\w+)/.exec(message);
  if (sqlite) return sqlite[1]!;
  // PostgreSQL: code 23505 with the constraint named <table>_<column>_key or <table>_pkey
  const pg = error as { code?: string; constraint?: string; table?: string };
  if (pg.code === '23505' && pg.constraint) {
    const match = /^[a-z]+_(\w+)_key$/.exec(pg.constraint);
    return match ? match[1]! : 'primary key';
  }
  return null;
}
