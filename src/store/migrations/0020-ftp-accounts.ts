// The account holder's FTP accounts (CONTRACT §14): a login of its own (`<login>@<main domain>`),
// its password as a SHA-512 crypt hash only, the directory it is confined to (relative to the
// home) and its quota. A login is unique within its account; the main domain makes it unique across
// the fleet.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('ftp_accounts')
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('login', 'text', (column) => column.notNull())
    .addColumn('password_hash', 'text', (column) => column.notNull())
    .addColumn('directory', 'text', (column) => column.notNull())
    .addColumn('quota', 'integer')
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addPrimaryKeyConstraint('ftp_accounts_key', ['user', 'login'])
    .execute();
}
