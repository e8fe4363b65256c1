// The OpenAPI 3.1 description of the API, generated from the operations' own schemas and the error
// catalogue, never written by hand. Served at /api/openapi.json on both listeners.
import { catalogue, type ErrorCode } from '../core/errors.ts';
import { KEY_HEADER } from '../operations/idempotency.ts';
import { errorsOf, type Operation, type ParamSpec } from '../operations/operation.ts';
import type { Registry } from '../operations/registry.ts';
import { components } from '../operations/results.ts';
import { BERTH_VERSION } from '../operations/version.ts';

function paramSchema(spec: ParamSpec): Record<string, unknown> {
  return { ...spec.kind.schema, description: `${spec.description}: ${spec.kind.rule}.` };
}

function requestSchema(operation: Operation): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    apiuser: {
      type: 'string',
      description: 'API user name, when the credentials are sent as fields rather than X-API-USER',
    },
    apiauth: {
      type: 'string',
      description: 'API password, when the credentials are sent as fields rather than X-API-PASSWORD',
    },
  };
  const required: string[] = [];
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
};

function tagOf(operation: Operation): string {
  const tag = Object.keys(TAGS).find((name) => TAGS[name]!.operations.includes(operation.name));
  if (!tag) throw new Error(`The operation ${operation.name} has no tag in openapi.ts`);
  return tag;
}

function describe(operation: Operation): string {
  return [
    operation.summary,
    !operation.audiences.includes('reseller') && 'Administrator only: 403 forbidden under a reseller.',
    operation.changesState &&
      `A change: audited, refused on a demonstration server; send ${KEY_HEADER} to retry it safely.`,
  ]
    .filter(Boolean)
    .join(' ');
}

/** The OpenAPI document of a registry's operations. */
export function openApiDocument(registry: Registry): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const operation of registry.operations.values()) {
    const body = requestSchema(operation);
    const headers = [
      {
        name: 'X-RESELLER',
        in: 'header',
        required: false,
        description: 'Act as this reseller (required on the reseller listener)',
        schema: { type: 'string' },
      },
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
    paths[operation.name === '' ? '/' : `/${operation.name}/`] = {
      post: {
        operationId: operation.name === '' ? 'credentialcheck' : operation.name,
        summary: operation.summary,
        description: describe(operation),
        tags: [tagOf(operation)],
        parameters: headers,
        requestBody: {
          required: false,
          content: {
            'application/x-www-form-urlencoded': { schema: body, example: operation.example },
            'multipart/form-data': { schema: body },
            'application/json': { schema: body },
          },
        },
        responses: responses(operation),
        // The headers, or (the empty requirement) the apiuser and apiauth fields of the body.
        security: [{ apiUser: [], apiPassword: [] }, {}],
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth provisioning API',
      version: BERTH_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description:
        'Create and manage hosting accounts. Every operation is a POST; the HTTP status equals the envelope status.',
    },
    tags: Object.entries(TAGS).map(([name, { description }]) => ({ name, description })),
    servers: [{ url: '/api/v1' }, { url: '/api' }],
    paths,
    components: {
      securitySchemes: {
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
