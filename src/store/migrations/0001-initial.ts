import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { DialectName } from './index.ts';

const LIMITS = [
  'addondomains',
  'parkeddomains',
  'subdomains',
  'email_accounts',
  'ftp',
  'sql',
  'maillist',
  'bandwidth',
  'quota',
  'mailquota',
] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations are written against no fixed schema.
export async function up(db: Kysely<any>, dialect: DialectName): Promise<void> {
  let packages = db.schema
    .createTable('packages')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('feature', 'text', (c) => c.notNull());
  for (const limit of LIMITS) packages = packages.addColumn(limit, 'integer');
  await packages
    .addColumn('ipv4', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ipv6', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('shell', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.insertInto('packages').values({ name: 'default', feature: 'default' }).execute();

  let accounts = db.schema
    .createTable('accounts')
    .addColumn('user', 'text', (c) => c.primaryKey())
    .addColumn('domain', 'text', (c) => c.notNull().unique())
    .addColumn('contact_email', 'text', (c) => c.notNull())
    .addColumn('package', 'text', (c) => c.notNull().references('packages.name'))
    .addColumn('feature', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('previous_owner', 'text')
    .addColumn('homedir', 'text', (c) => c.notNull())
    .addColumn('language', 'text', (c) => c.notNull())
    .addColumn('theme', 'text', (c) => c.notNull())
    .addColumn('mailserver', 'text', (c) => c.notNull())
    .addColumn('dkim', 'integer', (c) => c.notNull())
    .addColumn('spf', 'integer', (c) => c.notNull())
    .addColumn('use_registrar_ns', 'integer', (c) => c.notNull())
    .addColumn('nameservers', 'text', (c) => c.notNull())
    .addColumn('setup_at', 'text', (c) => c.notNull())
    .addColumn('dedicated_ipv4', 'text', (c) => c.unique())
    .addColumn('dedicated_ipv6', 'text', (c) => c.unique())
    .addColumn('shell_enabled', 'integer', (c) => c.notNull())
    .addColumn('reseller', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('selfown', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('alpha', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('reseller_limit', 'integer')
    .addColumn('reseller_bandwidth', 'integer')
    .addColumn('reseller_quota', 'integer');
  for (const limit of LIMITS) accounts = accounts.addColumn(limit, 'integer');
  await accounts
    .addColumn('suspended', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('suspend_reason', 'text')
    .addColumn('suspended_at', 'text')
    .addColumn('suspended_by', 'text')
    .addColumn('quota_usage', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bandwidth_usage', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.createIndex('accounts_owner').on('accounts').column('owner').execute();
  await db.schema.createIndex('accounts_package').on('accounts').column('package').execute();

  await db.schema
    .createTable('api_users')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('access', 'text', (c) => c.notNull())
    .addColumn('allowed_ips', 'text', (c) => c.notNull())
    .addColumn('reseller', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();

  const isPostgres = dialect === 'postgres';
  await db.schema
    .createTable('audit_log')
    .addColumn('id', isPostgres ? sql`bigserial` : 'integer', (c) =>
      isPostgres ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('api_user', 'text', (c) => c.notNull())
    .addColumn('reseller', 'text')
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('target', 'text')
    .addColumn('status', 'integer', (c) => c.notNull())
    .addColumn('code', 'text')
    .execute();

  await db.schema
    .createTable('auth_failures')
    .addColumn('address', 'text', (c) => c.primaryKey())
    .addColumn('window_started_ms', 'bigint', (c) => c.notNull())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('locked_until_ms', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .execute();
}
