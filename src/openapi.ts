// The OpenAPI 3.1 description of the API, generated from the operations' own schemas and the error
// catalogue, never written by hand. Served at /api/openapi.json on both listeners.
import { catalogue } from './errors.ts';
import { KEY_HEADER } from './operations/idempotency.ts';
import type { Operation, ParamSpec } from './operations/operation.ts';
import { operations } from './operations/registry.ts';
import { BERTH_VERSION } from './operations/version.ts';

function paramSchema(spec: ParamSpec): Record<string, unknown> {
  return { ...spec.kind.schema, description: `${spec.description}: ${spec.kind.rule}.` };
}

function requestSchema(operation: Operation): Record<string, unknown> {
  const properties: Record<string, unknown> = {
    apiuser: { type: 'string', description: 'API user name (form style; or send the X-API-USER header)' },
    apiauth: { type: 'string', description: 'API password (form style; or send the X-API-PASSWORD header)' },
  };
  const required: string[] = [];
  for (const [name, spec] of Object.entries(operation.params)) {
    properties[name] = paramSchema(spec);
    if (spec.required) required.push(name);
  }
  return { type: 'object', properties, ...(required.length > 0 && { required }) };
}

function responses(operation: Operation): Record<string, unknown> {
  const error = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
  const ok =
    operation.name === ''
      ? {
          description: 'The credentials are valid (no envelope).',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: { username: { type: 'string' }, auth: { const: 'API' } },
                required: ['username', 'auth'],
              },
            },
          },
        }
      : {
          description: operation.summary,
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Envelope' } } },
        };
  const statuses = [...new Set(Object.values(catalogue).map((entry) => entry.status))].sort();
  const out: Record<string, unknown> = { 200: ok };
  for (const status of statuses) {
    const codes = Object.entries(catalogue)
      .filter(([, entry]) => entry.status === status)
      .map(([code]) => code);
    out[String(status)] = { description: `Error: ${codes.join(', ')}`, ...error };
  }
  return out;
}

export function openApiDocument(): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const operation of operations.values()) {
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
        ...(operation.adminOnly && { description: 'Administrator only: 403 forbidden under a reseller.' }),
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
        security: [{ formCredentials: [] }, { headerUser: [], headerPassword: [] }],
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Berth provisioning API',
      version: BERTH_VERSION,
      description:
        'Create and manage hosting accounts. Every operation is a POST; the HTTP status equals the envelope status.',
    },
    servers: [{ url: '/api/v1' }, { url: '/api' }],
    paths,
    components: {
      securitySchemes: {
        headerUser: { type: 'apiKey', in: 'header', name: 'X-API-USER' },
        headerPassword: { type: 'apiKey', in: 'header', name: 'X-API-PASSWORD' },
        formCredentials: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Form-Credentials',
          description:
            'Not a header: send apiuser and apiauth as body fields instead of the X-API-* headers.',
        },
      },
      schemas: {
        Envelope: {
          type: 'object',
          properties: { data: {}, info: { type: 'string' }, status: { type: 'integer', const: 200 } },
          required: ['data', 'info', 'status'],
        },
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
