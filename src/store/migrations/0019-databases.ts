// The account holder's MariaDB databases and their users (CONTRACT §14). A name is unique across
// the store (MariaDB has one namespace per server, and the account's prefix makes names unique
// across the fleet). A user keeps its password as MariaDB's own hash only (mysql_native_password:
// `*` and the upper-case hex SHA-1 of the SHA-1), and the databases granted to it comma-separated.
import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('databases')
    .addColumn('name', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('databases_user').on('databases').column('user').execute();
  await db.schema
    .createTable('database_users')
    .addColumn('name', 'text', (column) => column.notNull().unique())
    .addColumn('user', 'text', (column) => column.notNull())
    .addColumn('password_hash', 'text', (column) => column.notNull())
    .addColumn('grants', 'text', (column) => column.notNull())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .execute();
  await db.schema.createIndex('database_users_user').on('database_users').column('user').execute();
}
