// The API routes: /api/<op>/ and /api/v1/<op>/, POST only. On the admin and reseller listeners, the
// administrator's and resellers' operations with both credential styles of API accounts, and the
// account holders' operations for a holder at /api/account/<op>/ (CONTRACT §14); on the customer
// listener, the holders' own, with the account's password (HTTP Basic) or an API token (Bearer).
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { clientAddress } from '../auth/access.ts';
import { type Credentials, sameDigest } from '../auth/authenticate.ts';
import { authenticateHolder, authenticateToken } from '../auth/holders.ts';
import { type ApiError, apiError, invalid } from '../core/errors.ts';
import { auditableApiUser } from '../core/values.ts';
import { appendRefusal, execute } from '../operations/execute.ts';
import type { Operation, RawParams, Result } from '../operations/operation.ts';
import type { ApiPrincipal, Holder } from '../operations/principal.ts';
import type { Registry } from '../operations/registry.ts';
import type { Services } from '../services.ts';
import { findAccount } from '../store/accounts.ts';
import type { ApiUser } from '../store/api-users.ts';
import { sharedChangeCounter } from '../store/prepared.ts';
import { openApiDocument } from './openapi.ts';

export type Listener = 'admin' | 'reseller' | 'customer';

export const OPENAPI_PATH = '/api/openapi.json';

const RESELLER_PORT_ONLY = 'This port serves reseller calls only: send X-RESELLER';

/** The operation a path names: `/api/v1/listaccts/` → `listaccts`; the bare base path → ``. */
export function operationName(path: string): string | null {
  const match = /^\/api(?:\/v1)?(?:\/([^/]*))?\/?$/.exec(path);
  if (!match) return null;
  return match[1] ?? '';
}

/**
 * Every operation by each path that names it exactly, as a call without a query string is sent:
 * one lookup instead of splitting and matching the path on every call.
 */
const pathsOf = (registry: Registry, bases = ['/api', '/api/v1']) =>
  new Map<string, Operation>(
    [...registry.operations].flatMap(([name, operation]) =>
      bases.flatMap((base) => {
        const path = name === '' ? base : `${base}/${name}`;
        return [
          [path, operation],
          [`${path}/`, operation],
        ] as const;
      }),
    ),
  );

/** The holder's operation a path names: `/api/account/list_domains/` → `list_domains`. */
function accountOperationName(path: string): string | null {
  return /^\/api(?:\/v1)?\/account\/([^/]*)\/?$/.exec(path)?.[1] ?? null;
}

/**
 * Counts an API call's answer in the metrics, by its operation and status, with the time from its
 * arrival. Counted where the answer is sent, not in an onResponse hook: a hook there makes Fastify
 * follow every response to its end, which cost a call more than all of Berth's own work for it.
 */
function count(services: Services, request: FastifyRequest, status: number): void {
  const operation = request.apiOperation;
  if (!operation) return;
  services.metrics.request(
    operation.name || 'credentialcheck',
    status,
    (performance.now() - request.apiStarted) / 1000,
  );
}

/** Sends what an operation returned. A streamed answer is counted when it has been sent whole. */
function answer(services: Services, reply: FastifyReply, result: Result): void {
  const json = 'application/json; charset=utf-8';
  if (result.stream) {
    const body = Readable.from(result.stream);
    // Once its headers are sent, a failure can only cut the answer short: logged here.
    body.once('error', (error) =>
      services.log.error({ err: error, operation: reply.request.apiOperation?.name }, 'answer cut short'),
    );
    reply.raw.once('close', () => count(services, reply.request, reply.statusCode));
    reply.type(json).send(body);
    return;
  }
  if (result.body)
    reply
      .code(result.status ?? 200)
      .type(json)
      .send(result.body);
  else if (result.bare) reply.send(result.data);
  else reply.send({ data: result.data, info: result.info, status: 200 });
  count(services, reply.request, result.status ?? 200);
}

export function sendError(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply
    .code(error.status)
    .headers(error.headers)
    .send({ data: error.data, info: error.message, status: error.status });
}

/** Sends an error in answer to an API call, counted as its answer. */
export function sendApiError(services: Services, reply: FastifyReply, error: ApiError): FastifyReply {
  count(services, reply.request, error.status);
  return sendError(reply, error);
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

/**
 * The reseller a call acts as: the API account's bound reseller, or the X-RESELLER header. A
 * binding holds the reseller account itself: once that account is removed or stops being a
 * reseller, the binding refuses every call, even if a new account takes the name.
 */
async function actingReseller(services: Services, apiUser: ApiUser, named: string | undefined) {
  if (apiUser.reseller !== null && named !== undefined && named !== apiUser.reseller) {
    throw apiError('forbidden', {
      reason: `The API user ${apiUser.name} may act only as ${apiUser.reseller}.`,
    });
  }
  const name = apiUser.reseller ?? named;
  if (name === undefined) return null;
  const account = await findAccount(services.store.db, name);
  if (apiUser.reseller !== null && (!account?.reseller || account.reseller.id !== apiUser.resellerId)) {
    throw apiError('forbidden', {
      reason: `The API user ${apiUser.name} is bound to a reseller account that no longer exists as a reseller; the administrator must bind it again or delete it.`,
    });
  }
  if (!account?.reseller || account.suspension) {
    throw apiError('forbidden', { reason: 'X-RESELLER must name an active reseller account.' });
  }
  return account;
}

/**
 * The principal each keep-alive connection was last identified as, with the store's change counter
 * read before the checks. The next call on that connection with the same credentials, address and
 * X-RESELLER is the same principal while the counter stands still: no reset, lock-out, deletion,
 * access change or reseller change (from this process or another) can have happened since. The
 * counter a call compares is read after the call arrived, once for all calls of the same turn of
 * the event loop (sharedChangeCounter). The password is kept only as its keyed hash (CONTRACT §3),
 * compared in constant time. PostgreSQL has no such counter: there every call checks.
 */
const identified = new WeakMap<
  object,
  {
    version: string;
    user: string;
    address: string;
    reseller: string | undefined;
    fingerprint: string;
    principal: ApiPrincipal;
  }
>();

/**
 * The principal of a request: the administrator or a reseller through an API account, the one its
 * connection was last identified as while nothing changed. Chained on the counter's read, not an
 * async function: a known connection's call, most calls, then costs one promise.
 */
function identify(
  services: Services,
  request: FastifyRequest,
  params: RawParams,
  address: string,
): Promise<ApiPrincipal> {
  let credentials: Credentials | null;
  try {
    credentials = credentialsOf(request, params);
  } catch (error) {
    return Promise.reject(error);
  }
  const named = header(request, 'x-reseller');
  const counter = sharedChangeCounter(services.store.db);
  if (!counter) return identifyAnew(services, request, credentials, named, null, address);
  return counter.then((version) => {
    const known = identified.get(request.socket);
    if (
      known &&
      credentials &&
      known.version === version &&
      known.user === credentials.user &&
      known.address === address &&
      known.reseller === named &&
      sameDigest(services.auth.fingerprint(credentials.password), known.fingerprint)
    ) {
      const touching = services.auth.used(known.principal.apiAccount.name);
      return touching ? touching.then(() => known.principal) : known.principal;
    }
    return identifyAnew(services, request, credentials, named, version, address);
  });
}

async function identifyAnew(
  services: Services,
  request: FastifyRequest,
  credentials: Credentials | null,
  named: string | undefined,
  version: string | null,
  address: string,
): Promise<ApiPrincipal> {
  const apiUser = await services.auth.authenticate(credentials, address);
  const reseller = await actingReseller(services, apiUser, named);
  const apiAccount = { name: apiUser.name, id: apiUser.id };
  const principal: ApiPrincipal = reseller
    ? { kind: 'reseller', via: 'api', apiAccount, reseller, address }
    : { kind: 'admin', via: 'api', apiAccount, address };
  if (version !== null && credentials)
    identified.set(request.socket, {
      version,
      user: credentials.user,
      address,
      reseller: named,
      fingerprint: services.auth.fingerprint(credentials.password),
      principal,
    });
  return principal;
}

const USER_NAME = /^[a-z][a-z0-9]{0,15}$/;
const HOLDER_CREDENTIALS =
  "Log in with HTTP Basic (the account's user name and password) or send Authorization: Bearer <API token>.";

/** The user name and password of HTTP Basic, or the token of Bearer; null for anything else. */
function holderCredentials(request: FastifyRequest): Credentials | { token: string } | null {
  const value = header(request, 'authorization');
  const match = value && /^(Basic|Bearer) +([^ ]+) *$/i.exec(value);
  if (!match) return null;
  if (match[1]!.toLowerCase() === 'bearer') return { token: match[2]! };
  const decoded = Buffer.from(match[2]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 1 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** The account holder a customer API call comes from (CONTRACT §14). */
async function identifyHolder(services: Services, request: FastifyRequest, address: string): Promise<Holder> {
  const credentials = holderCredentials(request);
  if (!credentials) throw apiError('forbidden', { reason: HOLDER_CREDENTIALS });
  if ('token' in credentials) {
    const { account, name } = await authenticateToken(services, credentials.token, address);
    return { kind: 'holder', via: 'token', account, credential: `token:${name}`, address };
  }
  const account = await authenticateHolder(services, credentials.user, credentials.password, address);
  return { kind: 'holder', via: 'password', account, credential: null, address };
}

/** The account a customer API call claims, as the audit log shows a call refused before it is known. */
function claimedHolder(request: FastifyRequest): string {
  const credentials = holderCredentials(request);
  return credentials && 'user' in credentials && USER_NAME.test(credentials.user) ? credentials.user : '?';
}

declare module 'fastify' {
  interface FastifyRequest {
    apiOperation: Operation | null;
    /** Whether the call is an administrator's or reseller's for a holder (/api/account/<op>/). */
    apiActing: boolean;
    /** Whether execute() took the call over, and with it the call's audit entry. */
    apiExecuted: boolean;
    /** The client's address (CONTRACT §3), worked out once for the API's hooks and handler. */
    apiAddress: string | null;
    /** When the call arrived (performance.now()), for its latency in the metrics. */
    apiStarted: number;
  }
}

/**
 * Audits a call to a state-changing operation refused before execute() could run it (405, the
 * reseller-port rule, 413, 415, a body that does not parse): the caller is known only by the
 * name it claims in a header, written as the audit log writes claimed names.
 */
export async function auditRefusal(
  services: Services,
  request: FastifyRequest,
  error: ApiError,
): Promise<void> {
  const operation = request.apiOperation;
  if (!operation?.changesState || request.apiExecuted) return;
  await appendRefusal(services, {
    at: services.now().toISOString(),
    api_user: auditableApiUser(header(request, 'x-api-user') ?? ''),
    reseller: null,
    address: request.apiAddress ?? clientAddress(request),
    operation: operation.name,
    target: null,
    status: error.status,
    code: error.code,
  });
}

/**
 * The API of `registry`'s operations, for the principals the listener serves; on the admin and
 * reseller listeners also `holders`' operations, called for a holder at /api/account/<op>/.
 */
export function registerApi(
  app: FastifyInstance,
  services: Services,
  listener: Listener,
  everyAnswer: Record<string, string>,
  registry: Registry,
  holders: Registry | null = null,
): void {
  const operationPaths = pathsOf(registry);
  const accountPaths = holders ? pathsOf(holders, ['/api/account', '/api/v1/account']) : new Map();
  app.decorateRequest('apiOperation', null);
  app.decorateRequest('apiActing', false);
  app.decorateRequest('apiExecuted', false);
  app.decorateRequest('apiAddress', null);
  app.decorateRequest('apiStarted', 0);

  // The API's description, for client generators: public, on both listeners.
  const description = JSON.stringify(
    openApiDocument(
      registry,
      listener === 'customer' ? { customer: true } : { holders: holders ?? undefined },
    ),
  );
  app.get(OPENAPI_PATH, async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(description),
  );

  // Every answer's headers (app.ts), and the answers given before the body is read and before
  // authentication. A hook that answers does not call done(). A callback hook, not an async one:
  // it runs on every call, and a promise costs more than its work.
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(everyAnswer);
    let operation = operationPaths.get(request.url);
    if (!operation) {
      operation = accountPaths.get(request.url);
      request.apiActing = operation !== undefined;
    }
    if (!operation) {
      const path = request.url.split('?')[0]!;
      if (path === OPENAPI_PATH && (request.method === 'GET' || request.method === 'HEAD')) return done();
      const forHolder = holders ? accountOperationName(path) : null;
      const name = forHolder ?? operationName(path);
      if (name === null) return done();
      operation = forHolder !== null ? holders!.find(forHolder) : registry.find(name);
      request.apiActing = forHolder !== null;
      if (!operation) {
        sendError(reply, apiError('unknown_operation', { path }));
        return;
      }
    }
    request.apiOperation = operation;
    request.apiStarted = performance.now();
    request.apiAddress = clientAddress(request);
    const refuse = (error: ApiError) => {
      void auditRefusal(services, request, error).then(() => sendApiError(services, reply, error));
    };
    if (request.method !== 'POST') {
      reply.header('allow', 'POST');
      return refuse(apiError('method_not_allowed', { method: request.method.slice(0, 20) }));
    }
    // Reads from an address known to be locked out are refused here, cheaply; a state-changing
    // call goes on to execute(), which refuses it too but also records it in the audit log.
    const locked = operation.changesState ? null : services.lockout.knownLock(request.apiAddress);
    if (locked) {
      sendApiError(services, reply, locked);
      return;
    }
    if (listener === 'reseller' && header(request, 'x-reseller') === undefined) {
      return refuse(apiError('forbidden', { reason: RESELLER_PORT_ONLY }));
    }
    done();
  });

  // A callback handler, not an async one: Fastify would wait on an async handler's promise as
  // well as the handler on execute()'s. A failure goes to the error handler, as one thrown would.
  const handler = (request: FastifyRequest, reply: FastifyReply): void => {
    const operation = request.apiOperation;
    if (!operation) {
      sendError(reply, apiError('unknown_operation', { path: request.url.split('?')[0]! }));
      return;
    }
    const params: RawParams = request.body instanceof Map ? (request.body as RawParams) : new Map();
    const address = request.apiAddress ?? clientAddress(request);
    const customer = listener === 'customer';
    const claimedUser = header(request, 'x-api-user') ?? String(params.get('apiuser')?.[0] ?? '');
    const named = params.get('user');
    request.apiExecuted = true;
    // Every field written, none spread in: a literal with a spread in it is built by the runtime,
    // and execute() would then read calls of many shapes.
    execute(services, {
      operation,
      params,
      address,
      claimedUser,
      claimedHolder: customer ? claimedHolder(request) : undefined,
      idempotencyKey: header(request, 'idempotency-key'),
      identify: customer
        ? () => identifyHolder(services, request, address)
        : () => identify(services, request, params, address),
      actingFor: request.apiActing ? (named ?? []) : undefined,
    }).then(
      (result) => {
        try {
          answer(services, reply, result);
        } catch (error) {
          reply.send(error);
        }
      },
      (error: unknown) => reply.send(error),
    );
  };

  for (const url of ['/api', '/api/*']) app.all(url, handler);
}
