// The OpenAPI 3.1 description of the API, generated from the operations' own schemas and the error
// catalogue, never written by hand. Served at /api/openapi.json on every listener: the admin and
// reseller listeners describe their operations and the holders' at /account/<op>/; the customer
// listener, the holders' own with their credentials (CONTRACT §14).
import { catalogue, type ErrorCode } from '../core/errors.ts';
import { KEY_HEADER } from '../operations/idempotency.ts';
import { errorsOf, type Operation, type ParamSpec } from '../operations/operation.ts';
import type { Registry } from '../operations/registry.ts';
import { components } from '../operations/results.ts';
import { BERTH_VERSION } from '../operations/version.ts';

function paramSchema(spec: ParamSpec): Record<string, unknown> {
  return { ...spec.kind.schema, description: `${spec.description}: ${spec.kind.rule}.` };
}

/** Who calls: through an API account, for a holder through one (/account/<op>/), or as a holder. */
type Side = 'api' | 'acting' | 'customer';

const API_FIELDS = {
  apiuser: {
    type: 'string',
    description: 'API user name, when the credentials are sent as fields rather than X-API-USER',
  },
  apiauth: {
    type: 'string',
    description: 'API password, when the credentials are sent as fields rather than X-API-PASSWORD',
  },
};

function requestSchema(operation: Operation, side: Side): Record<string, unknown> {
  const properties: Record<string, unknown> = side === 'customer' ? {} : { ...API_FIELDS };
  const required: string[] = [];
  if (side === 'acting') {
    properties.user = { type: 'string', description: 'The account whose holder the call acts for' };
    required.push('user');
  }
  for (const [name, spec] of Object.entries(operation.params)) {
    properties[name] = paramSchema(spec);
    if (spec.required) required.push(name);
  }
  return { type: 'object', properties, ...(required.length > 0 && { required }) };
}

function successSchema(operation: Operation): Record<string, unknown> {
  if (operation.name === '') return operation.result;
  return {
    type: 'object',
    properties: {
      data: operation.result,
      info: { type: 'string', description: 'What was done, in a sentence' },
      status: { type: 'integer', const: 200 },
    },
    required: ['data', 'info', 'status'],
  };
}

const RETRY_AFTER = {
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } },
};

/** The 200 answer, and per status the error codes this operation can answer with. */
function responses(operation: Operation): Record<string, unknown> {
  const out: Record<string, unknown> = {
    200: {
      description: operation.name === '' ? 'The credentials are valid (no envelope).' : 'Done.',
      content: { 'application/json': { schema: successSchema(operation) } },
    },
  };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of errorsOf(operation)) {
    const { status } = catalogue[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] = {
      description: `Refused or failed: ${codes.join(', ')} (docs/errors.md).`,
      ...((status === 429 || status === 503) && { headers: RETRY_AFTER }),
      content: {
        'application/json': {
          schema: {
            allOf: [
              { $ref: '#/components/schemas/Error' },
              {
                type: 'object',
                properties: {
                  data: { type: 'object', properties: { code: { enum: codes } } },
                  status: { const: status },
                },
              },
            ],
          },
        },
      },
    };
  }
  return out;
}

/** The groups of the reference, with their operations. */
const TAGS: Record<string, { description: string; operations: string[] }> = {
  Connection: {
    description: 'Check the credentials and the server.',
    operations: ['', 'test_connection', 'load-average', 'version'],
  },
  Accounts: {
    description:
      'Create, change, suspend, list and remove hosting accounts; log a holder into its control panel.',
    operations: [
      'createacct',
      'passwd',
      'accountsummary',
      'listaccts',
      'listsuspended',
      'usagestatistics',
      'get_current_users_count',
      'changecontactemail',
      'suspendacct',
      'unsuspendacct',
      'editquota',
      'changepackage',
      'removeacct',
      'create_user_session',
    ],
  },
  Resellers: {
    description: 'Make an account a reseller, or end that.',
    operations: ['setupreseller', 'terminatereseller', 'get_current_reseller_count'],
  },
  Packages: {
    description: 'The packages accounts are created on (changes are the administrator’s).',
    operations: ['listpackages', 'addpkg', 'editpkg', 'killpkg'],
  },
  Account: {
    description: "An account holder's own account: its record, usage and limits, and its password.",
    operations: ['account_info', 'change_password'],
  },
  Domains: {
    description: "The account's domains: its addon and parked domains and subdomains beside the main one.",
    operations: ['list_domains', 'add_domain', 'remove_domain'],
  },
  Email: {
    description: "The account's mailboxes, forwarders and mailing lists, at addresses of its domains.",
    operations: [
      'list_mailboxes',
      'add_mailbox',
      'change_mailbox_password',
      'change_mailbox_quota',
      'remove_mailbox',
      'list_forwarders',
      'add_forwarder',
      'remove_forwarder',
      'list_mailing_lists',
      'add_mailing_list',
      'remove_mailing_list',
      'add_list_member',
      'remove_list_member',
    ],
  },
  Databases: {
    description: "The account's MariaDB databases and database users, and which user may use which database.",
    operations: [
      'list_databases',
      'add_database',
      'remove_database',
      'add_database_user',
      'change_database_password',
      'remove_database_user',
      'grant_database',
      'revoke_database',
    ],
  },
  FTP: {
    description: "The account's FTP logins over TLS, each confined to a directory of its home.",
    operations: ['list_ftp_accounts', 'add_ftp_account', 'change_ftp_password', 'remove_ftp_account'],
  },
  'Cron jobs': {
    description: "The account's cron jobs: commands run on a schedule as its user, in its jail.",
    operations: ['list_cron_jobs', 'add_cron_job', 'remove_cron_job'],
  },
  'API tokens': {
    description: "The account holder's API tokens for the customer API.",
    operations: ['list_tokens', 'add_token', 'remove_token'],
  },
  Backups: {
    description:
      'Backups of an account (restic snapshots): made as jobs, listed, and restored whole, in part, or into an account removed since.',
    operations: ['backupacct', 'listbackups', 'restoreacct', 'list_backups', 'restore_backup'],
  },
};

function tagOf(operation: Operation): string {
  const tag = Object.keys(TAGS).find((name) => TAGS[name]!.operations.includes(operation.name));
  if (!tag) throw new Error(`The operation ${operation.name} has no tag in openapi.ts`);
  return tag;
}

function describe(operation: Operation): string {
  return [
    operation.summary,
    operation.audiences.includes('admin') &&
      !operation.audiences.includes('reseller') &&
      'Administrator only: 403 forbidden under a reseller.',
    operation.changesState &&
      `A change: audited, refused on a demonstration server; send ${KEY_HEADER} to retry it safely.`,
  ]
    .filter(Boolean)
    .join(' ');
}

const RESELLER_HEADER = {
  name: 'X-RESELLER',
  in: 'header',
  required: false,
  description: 'Act as this reseller (required on the reseller listener)',
  schema: { type: 'string' },
};

/** The credentials each side sends, as OpenAPI security requirements and schemes. */
const SECURITY = {
  // The headers, or (the empty requirement) the apiuser and apiauth fields of the body.
  api: {
    requirements: [{ apiUser: [], apiPassword: [] }, {}],
    schemes: {
      apiUser: {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-USER',
        description: 'The API user name; or send it as the apiuser field of the body.',
      },
      apiPassword: {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-PASSWORD',
        description: 'The API password; or send it as the apiauth field of the body.',
      },
    },
  },
  customer: {
    requirements: [{ password: [] }, { token: [] }],
    schemes: {
      password: {
        type: 'http',
        scheme: 'basic',
        description: "The account's user name and password.",
      },
      token: { type: 'http', scheme: 'bearer', description: 'An API token the holder made (add_token).' },
    },
  },
};

/** The path item of one operation. */
function pathItem(operation: Operation, side: Side): Record<string, unknown> {
  const body = requestSchema(operation, side);
  const headers = [
    ...(side === 'customer' ? [] : [RESELLER_HEADER]),
    ...(operation.changesState
      ? [
          {
            name: KEY_HEADER,
            in: 'header',
            required: false,
            description: 'Retry safely: the same key within 24 hours replays the first answer',
            schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
          },
        ]
      : []),
  ];
  const name = operation.name === '' ? 'credentialcheck' : operation.name;
  const example = side === 'acting' ? { user: 'alice', ...operation.example } : operation.example;
  return {
    post: {
      operationId: side === 'acting' ? `account_${name}` : name,
      summary: operation.summary,
      description: describe(operation),
      tags: [tagOf(operation)],
      parameters: headers,
      requestBody: {
        required: side === 'acting',
        content: {
          'application/x-www-form-urlencoded': { schema: body, example },
          'multipart/form-data': { schema: body },
          'application/json': { schema: body },
        },
      },
      responses: responses(operation),
      security: SECURITY[side === 'customer' ? 'customer' : 'api'].requirements,
    },
  };
}

/**
 * The OpenAPI document of a registry's operations: through API accounts, with `holders`' at
 * /account/<op>/, or (`customer`) the holders' own.
 */
export function openApiDocument(
  registry: Registry,
  options: { customer?: boolean; holders?: Registry } = {},
): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  const side: Side = options.customer ? 'customer' : 'api';
  for (const operation of registry.operations.values())
    paths[operation.name === '' ? '/' : `/${operation.name}/`] = pathItem(operation, side);
  for (const operation of options.holders?.operations.values() ?? [])
    paths[`/account/${operation.name}/`] = pathItem(operation, 'acting');
  const used = new Set(
    [...registry.operations.values(), ...(options.holders?.operations.values() ?? [])].map(tagOf),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth provisioning API',
      version: BERTH_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Create and manage hosting accounts. Every operation is a POST; the HTTP status equals the envelope status.',
    },
    tags: Object.entries(TAGS)
      .filter(([name]) => used.has(name))
      .map(([name, { description }]) => ({ name, description })),
    servers: [{ url: '/api/v1' }, { url: '/api' }],
    paths,
    components: {
      securitySchemes: SECURITY[side === 'customer' ? 'customer' : 'api'].schemes,
      schemas: {
        ...components,
        Error: {
          type: 'object',
          properties: {
            data: {
              type: 'object',
              properties: {
                code: { type: 'string', enum: Object.keys(catalogue) },
                param: { type: 'string', description: 'The one parameter at fault, when there is one' },
              },
              required: ['code'],
            },
            info: { type: 'string', description: 'A sentence a person can act on' },
            status: { type: 'integer' },
          },
          required: ['data', 'info', 'status'],
        },
      },
    },
  };
}
