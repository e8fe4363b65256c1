// The API routes: /api/<op>/ and /api/v1/<op>/, POST only, with both credential styles.
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { canonicalAddress } from '../auth/access.ts';
import type { Credentials } from '../auth/authenticate.ts';
import { type ApiError, apiError, invalid } from '../errors.ts';
import { openApiDocument } from '../openapi.ts';
import { execute } from '../operations/execute.ts';
import type { Caller, Operation, RawParams } from '../operations/operation.ts';
import { findOperation } from '../operations/registry.ts';
import type { Services } from '../services.ts';
import { findAccount } from '../store/accounts.ts';
import type { ApiUser } from '../store/api-users.ts';

export type Listener = 'admin' | 'reseller';

export const OPENAPI_PATH = '/api/openapi.json';

const RESELLER_PORT_ONLY = 'This port serves reseller calls only: send X-RESELLER';

/** The operation a path names: `/api/v1/listaccts/` → `listaccts`; the bare base path → ``. */
export function operationName(url: string): string | null {
  const path = url.split('?')[0]!;
  const match = /^\/api(?:\/v1)?(?:\/([^/]*))?\/?$/.exec(path);
  if (!match) return null;
  return match[1] ?? '';
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply
    .code(error.status)
    .headers(error.headers)
    .send({ data: error.data, info: error.message, status: error.status });
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  const text = Array.isArray(value) ? value.join(',') : value;
  return text === undefined || text === '' ? undefined : text;
}

function single(params: RawParams, name: string): string | undefined {
  const values = params.get(name) ?? [];
  if (values.length > 1) throw invalid(name, 'it is given more than once');
  const value = values[0];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Header style when X-API-USER is present, else form style; half a style is no credentials. */
function credentialsOf(request: FastifyRequest, params: RawParams): Credentials | null {
  const headerUser = request.headers['x-api-user'];
  const [user, password] =
    headerUser !== undefined
      ? [header(request, 'x-api-user'), header(request, 'x-api-password')]
      : [single(params, 'apiuser'), single(params, 'apiauth')];
  return user !== undefined && password !== undefined ? { user, password } : null;
}

/** The reseller a call acts as: the API account's bound reseller, or the X-RESELLER header. */
async function actingReseller(services: Services, apiUser: ApiUser, named: string | undefined) {
  if (apiUser.reseller !== null && named !== undefined && named !== apiUser.reseller) {
    throw apiError('forbidden', {
      reason: `The API user ${apiUser.name} may act only as ${apiUser.reseller}.`,
    });
  }
  const name = apiUser.reseller ?? named;
  if (name === undefined) return null;
  const account = await findAccount(services.store.db, name);
  if (!account?.reseller || account.suspension) {
    throw apiError('forbidden', { reason: 'X-RESELLER must name an active reseller account.' });
  }
  return account;
}

declare module 'fastify' {
  interface FastifyRequest {
    apiOperation: Operation | null;
  }
}

export function registerApi(app: FastifyInstance, services: Services, listener: Listener): void {
  app.decorateRequest('apiOperation', null);

  // The API's description, for client generators: public, on both listeners.
  const description = JSON.stringify(openApiDocument());
  app.get(OPENAPI_PATH, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(description),
  );

  app.addHook('onResponse', async (request, reply) => {
    if (request.apiOperation) {
      services.metrics.request(
        request.apiOperation.name || 'credentialcheck',
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
    }
  });

  // Answered before the body is read and before authentication.
  app.addHook('onRequest', async (request, reply) => {
    if (request.url.split('?')[0] === OPENAPI_PATH && (request.method === 'GET' || request.method === 'HEAD'))
      return;
    const name = operationName(request.url);
    if (name === null) return;
    const operation = findOperation(name);
    if (!operation)
      return sendError(reply, apiError('unknown_operation', { path: request.url.split('?')[0]! }));
    if (request.method !== 'POST') {
      reply.header('allow', 'POST');
      return sendError(reply, apiError('method_not_allowed', { method: request.method }));
    }
    // Reads from an address known to be locked out are refused here, cheaply; a state-changing
    // call goes on to execute(), which refuses it too but also records it in the audit log.
    const locked = operation.changesState ? null : services.lockout.knownLock(canonicalAddress(request.ip));
    if (locked) return sendError(reply, locked);
    if (listener === 'reseller' && header(request, 'x-reseller') === undefined) {
      return sendError(reply, apiError('forbidden', { reason: RESELLER_PORT_ONLY }));
    }
    request.apiOperation = operation;
  });

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const operation = request.apiOperation;
    if (!operation)
      return sendError(reply, apiError('unknown_operation', { path: request.url.split('?')[0]! }));
    const params: RawParams = request.body instanceof Map ? (request.body as RawParams) : new Map();
    const address = canonicalAddress(request.ip);
    const claimedUser = header(request, 'x-api-user') ?? String(params.get('apiuser')?.[0] ?? '');
    const result = await execute(services, {
      operation,
      params,
      address,
      claimedUser,
      idempotencyKey: header(request, 'idempotency-key'),
      identify: async (): Promise<Caller> => {
        const apiUser = await services.auth.authenticate(credentialsOf(request, params), address);
        const reseller = await actingReseller(services, apiUser, header(request, 'x-reseller'));
        return { apiUser: apiUser.name, address, reseller };
      },
    });
    if (result.body)
      return reply
        .code(result.status ?? 200)
        .type('application/json; charset=utf-8')
        .send(result.body);
    if (result.stream) {
      return reply.type('application/json; charset=utf-8').send(Readable.from(result.stream));
    }
    if (result.bare) return reply.send(result.data);
    return reply.send({ data: result.data, info: result.info, status: 200 });
  };

  for (const url of ['/api', '/api/*']) app.all(url, handler);
}
