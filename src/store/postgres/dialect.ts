// PostgreSQL for several Berth servers sharing one store: a pooled `pg` connection behind Kysely's
// own PostgreSQL dialect.
import { PostgresDialect } from 'kysely';
import pg from 'pg';

const INT8 = 20;
const NUMERIC = 1700;

// Counts, sums and millisecond times come back as numbers: every value Berth stores fits in a
// double exactly (limits are at most 2^31-1, times are milliseconds since 1970).
const types = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8 || oid === NUMERIC) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

export function postgresDialect(connectionString: string): { dialect: PostgresDialect; pool: pg.Pool } {
  const pool = new pg.Pool({ connectionString, types, max: 10 });
  return { dialect: new PostgresDialect({ pool }), pool };
}
