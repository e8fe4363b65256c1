// What each operation answers in `data`, as JSON Schema: the OpenAPI document and the client's
// types are generated from these, and the tests check every answer they receive against them.
// The records are rendered in record.ts; a field added there is added here.
import type { ApiToken } from '../store/holder-credentials.ts';

export type Schema = Record<string, unknown>;

const text = (description?: string): Schema => ({ type: 'string', ...(description && { description }) });
const onOff: Schema = { type: 'string', enum: ['on', 'off'] };
const yesNo: Schema = { type: 'string', enum: ['yes', 'no'] };
const limit: Schema = {
  type: 'string',
  pattern: '^(unlimited|[0-9]+)$',
  description: '"unlimited" or a whole number',
};
const megabytes: Schema = { type: 'number', minimum: 0, description: 'MB used' };

function object(properties: Record<string, Schema>, optional: string[] = []): Schema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((name) => !optional.includes(name)),
    additionalProperties: false,
  };
}

/** A map keyed by user name. */
const byUser = (value: Schema): Schema => ({ type: 'object', additionalProperties: value });

const ref = (name: keyof typeof components): Schema => ({ $ref: `#/components/schemas/${name}` });

const createdFields = {
  user: text(),
  domain: text(),
  contactemail: text(),
  package: text(),
  feature: text(),
  owner: text('The reseller that owns it, or root'),
  homedir: text(),
  language: text(),
  theme: text(),
  mailserver: { type: 'string', enum: ['local', 'remote'] },
  dkim: onOff,
  spf: onOff,
  setuptime: text('YYYY-MM-DD HH:MM in the server’s time zone'),
  nameservers: { type: 'array', items: text() },
  dedicatedip: object({ ipv4: text(), ipv6: text(), status: onOff, status6: onOff }),
  shell: object({ shell: text(), status: onOff }),
  reseller: object({ status: onOff, selfown: onOff, alpha: onOff }),
  addondomains: limit,
  parkeddomains: limit,
  subdomains: limit,
  email: limit,
  ftp: limit,
  sql: limit,
  maillist: limit,
  bandwidth: limit,
  quota: limit,
  mailquota: limit,
  server: text('The server of the fleet whose system holds the account'),
};
const listedFields = { ...createdFields, is_reseller: yesNo, is_suspended: yesNo };
const summaryFields = { ...listedFields, bandwidth_usage: megabytes, quota_usage: megabytes };

/** The named schemas, under components/schemas in the OpenAPI document. */
export const components = {
  CreatedAccount: object(createdFields),
  ListedAccount: object(listedFields),
  SummaryAccount: object(summaryFields),
  UsageAccount: object(
    {
      ...summaryFields,
      quota_usage_reseller: megabytes,
      bandwidth_usage_reseller: megabytes,
      reseller_data: object({
        accounts: { type: 'array', items: text() },
        contactemail: text(),
        ips: object({ ipv4: text(), ipv6: text() }),
        name: text(),
        nameservers: { type: 'array', items: text() },
        reseller_bandwidth: limit,
        reseller_limt: limit,
        reseller_quota: limit,
      }),
    },
    ['reseller_data'],
  ),
  SuspendedAccount: object({
    user: text(),
    reason: text(),
    suspendtime: text('Weekday, DD-Mon-YYYY HH:MM:SS, zone'),
  }),
  Package: object({
    name: text(),
    quota: limit,
    bandwidth: limit,
    addondomains: limit,
    parkeddomains: limit,
    subdomains: limit,
    email_accounts: limit,
    ftp: limit,
    sql: limit,
    maillist: limit,
    mailquota: limit,
    feature: text(),
    ipv4: onOff,
    ipv6: onOff,
    shell: onOff,
  }),
  Domain: object({
    domain: text(),
    type: { type: 'string', enum: ['main', 'addon', 'parked', 'subdomain'] },
    docroot: text("Relative to the home; a parked domain's is the main site's"),
    created: text('When it was added, ISO 8601'),
  }),
  Mailbox: object({
    email: text('The whole address, its login for IMAP and submission'),
    domain: text(),
    quota: text('In MB, or "unlimited"'),
    created: text('When it was made, ISO 8601'),
  }),
  Forwarder: object({
    email: text(),
    domain: text(),
    to: { type: 'array', items: { type: 'string' }, description: 'Where its mail goes' },
    created: text('When it was made, ISO 8601'),
  }),
  MailingList: object({
    email: text("The list's address: a post to it reaches every member"),
    domain: text(),
    owner: text('Who gets mail to <list>+owner@<domain>'),
    members: {
      type: 'array',
      items: { type: 'string' },
      description:
        'The members the holder added, by address (those who subscribed by mail are the list’s own)',
    },
    created: text('When it was made, ISO 8601'),
  }),
  FtpAccount: object({
    login: text('The whole login, `<login>@<main domain>`'),
    directory: text("The directory it is confined to, relative to the home; '' for the home"),
    quota: text('In MB, or "unlimited"'),
    created: text('When it was made, ISO 8601'),
  }),
  CronJob: object({
    id: text('Names the job in remove_cron_job'),
    schedule: text('Five cron fields: minute hour day-of-month month day-of-week'),
    command: text("One line, run by /bin/sh as the account's user, in the home"),
    created: text('When it was added, ISO 8601'),
  }),
  Database: object({
    name: text('`<user>_<suffix>`'),
    users: { type: 'array', items: { type: 'string' }, description: 'The database users granted it' },
    created: text('When it was made, ISO 8601'),
  }),
  DatabaseUser: object({
    name: text('`<user>_<suffix>`, its login at localhost'),
    databases: {
      type: 'array',
      items: { type: 'string' },
      description: 'The databases it has every privilege on',
    },
    created: text('When it was made, ISO 8601'),
  }),
} satisfies Record<string, Schema>;

/** An API token of an account's holder, as list_tokens shows it (never the token itself). */
const token = object({
  name: text('The name the holder gave it'),
  created: text('When it was made, ISO 8601'),
  last_used: {
    type: ['string', 'null'],
    description: 'When it was last used, ISO 8601 (to the minute); null if never',
  },
});

/** A token as list_tokens answers it. */
export function tokenView(token: ApiToken) {
  return {
    name: token.name,
    created: token.createdAt.toISOString(),
    last_used: token.lastUsedAt?.toISOString() ?? null,
  };
}

/** The answer of a change that reports itself in one sentence, the same as `info`. */
const message: Schema = text('What was done, the same sentence as info');

export const results = {
  credentialCheck: object({ username: text(), auth: { type: 'string', const: 'API' } }),
  testConnection: object({ test: { type: 'string', const: 'Connection successful' } }),
  loadAverage: object({ load_average: text('The 1, 5 and 15 minute averages, space-separated') }),
  version: object({ version: text('Berth and the version'), version_code: text() }),
  createdAccount: ref('CreatedAccount'),
  count: (name: string): Schema => object({ [name]: { type: 'integer', minimum: 0 } }),
  listedAccounts: object({ accounts: byUser(ref('ListedAccount')) }),
  summary: object({ acct: ref('SummaryAccount') }),
  usage: object({ accounts: byUser(ref('UsageAccount')) }),
  suspended: object({ accounts: byUser(ref('SuspendedAccount')) }),
  packageNames: object({ packages: text('Package names, comma-separated') }),
  package: ref('Package'),
  editedPackage: object({ package: ref('Package'), accounts_updated: { type: 'integer', minimum: 0 } }),
  message,
  userSession: object({
    url: text('Opens the account’s control panel, logged in, once, within 120 seconds'),
    expires: { type: 'integer', description: 'When the URL stops working, in Unix seconds' },
  }),
  domain: ref('Domain'),
  domains: { type: 'array', items: ref('Domain') },
  mailbox: ref('Mailbox'),
  mailboxes: { type: 'array', items: ref('Mailbox') },
  forwarder: ref('Forwarder'),
  forwarders: { type: 'array', items: ref('Forwarder') },
  mailingList: ref('MailingList'),
  mailingLists: { type: 'array', items: ref('MailingList') },
  database: ref('Database'),
  databaseUser: ref('DatabaseUser'),
  databases: object({
    databases: { type: 'array', items: ref('Database') },
    users: { type: 'array', items: ref('DatabaseUser') },
  }),
  backupJob: object({ job: text('The backup job, as berth backup list and the portal show it') }),
  snapshots: object({
    snapshots: {
      type: 'array',
      items: object({
        id: text('The snapshot id restoreacct and restore_backup take'),
        time: text('When it was taken, ISO 8601'),
        size: { type: 'number', minimum: 0, description: 'What restoring it gives, in MB (two decimals)' },
        server: text(
          "The server whose repository holds it (another than the account's after a move); any server restores it",
        ),
      }),
    },
  }),
  cronJob: ref('CronJob'),
  cronJobs: { type: 'array', items: ref('CronJob') },
  ftpAccount: ref('FtpAccount'),
  ftpAccounts: { type: 'array', items: ref('FtpAccount') },
  token,
  newToken: object({
    name: text('The name the holder gave it'),
    token: text('The token, shown this once: send it as Authorization: Bearer <token>'),
    created: text('When it was made, ISO 8601'),
  }),
  tokens: { type: 'array', items: token },
  accountInfo: object({
    ...summaryFields,
    limits: object(
      Object.fromEntries(
        [
          'addondomains',
          'parkeddomains',
          'subdomains',
          'email',
          'ftp',
          'sql',
          'maillist',
          'quota',
          'bandwidth',
          'cron_jobs',
        ].map((name) => [name, object({ used: { type: 'integer', minimum: 0 }, limit })]),
      ),
    ),
  }),
};
