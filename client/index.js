// The Berth client for Node.js: both credential styles, X-RESELLER, Idempotency-Key, timeouts,
// retries of calls that are safe to repeat, and errors that carry Berth's error code. BerthClient
// speaks for billing (the admin and reseller listeners, and an account holder's operations for a
// holder); BerthHolderClient speaks for an account's holder on the customer listener.
// Plain JavaScript, so that it runs from node_modules; its types are in index.d.ts.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

/** The operations that change nothing: retried after a failure like a change with a key. */
const READS = new Set([
  '',
  'test_connection',
  'load-average',
  'version',
  'get_current_users_count',
  'get_current_reseller_count',
  'listsuspended',
  'accountsummary',
  'listaccts',
  'listpackages',
  'usagestatistics',
  'account_info',
  'list_domains',
  'list_tokens',
]);

export class BerthError extends Error {
  constructor(status, body) {
    super(body?.info ?? `Berth answered ${status}`);
    this.name = 'BerthError';
    this.status = status;
    this.code = body?.data?.code ?? 'internal';
    this.param = body?.data?.param;
    this.retryAfter = undefined;
  }
}

const DEFAULTS = { timeoutMs: 30_000, retries: 2 };

/** Sends a call, retrying it (when safe to repeat) after a 5xx, a 429 or a network error. */
async function retrying(options, safe, send) {
  const attempts = 1 + (safe ? options.retries : 0);
  let last;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return await send();
    } catch (error) {
      last = error;
      const retryable = !(error instanceof BerthError) || error.status >= 500 || error.status === 429;
      if (!retryable || attempt === attempts) throw error;
      const wait =
        error instanceof BerthError && error.retryAfter ? error.retryAfter * 1000 : 200 * 2 ** attempt;
      await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 10_000)));
    }
  }
  throw last;
}

/** One POST of form fields to `path`; resolves with the answer's `data` (`bare`: the whole answer). */
function post(options, path, fields, headers, timeoutMs, bare) {
  const url = new URL(path, options.url);
  const body = fields.toString();
  const all = {
    'content-type': 'application/x-www-form-urlencoded',
    'content-length': String(Buffer.byteLength(body)),
    ...headers,
  };
  const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: all,
        ca: options.ca,
        rejectUnauthorized: options.rejectUnauthorized ?? true,
        servername: options.servername,
        signal: AbortSignal.timeout(timeoutMs ?? options.timeoutMs),
      },
      (res) => {
        const chunks = [];
        res.on('data', (chunk) => chunks.push(chunk));
        res.on('end', () => {
          let parsed;
          try {
            parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return reject(
              new BerthError(res.statusCode ?? 0, {
                info: 'the answer was not JSON',
                data: { code: 'internal' },
              }),
            );
          }
          if (res.statusCode === 200) return resolve(bare ? parsed : parsed.data);
          const error = new BerthError(res.statusCode ?? 0, parsed);
          const retryAfter = Number(res.headers['retry-after']);
          if (retryAfter > 0) error.retryAfter = retryAfter;
          reject(error);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The parameters as form fields. */
function fieldsOf(params) {
  const fields = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) fields.set(key, String(value));
  return fields;
}

export class BerthClient {
  #options;

  constructor(options) {
    if (!options?.url || !options.user || !options.password)
      throw new TypeError('BerthClient needs url, user and password');
    this.#options = { style: 'header', ...DEFAULTS, ...options };
  }

  /** Calls an operation by name; resolves with its `data`, or rejects with a BerthError. */
  call(operation, params = {}, options = {}) {
    const path = `/api/v1/${operation ? `${operation}/` : ''}`;
    return this.#call(path, operation, params, options, operation === '');
  }

  /**
   * Calls an account holder's operation for the holder of `user`, an account in the caller's
   * scope (`/api/v1/account/<op>/`): what billing does for its customer.
   */
  callForHolder(user, operation, params = {}, options = {}) {
    return this.#call(`/api/v1/account/${operation}/`, operation, { ...params, user }, options, false);
  }

  #call(path, operation, params, options, bare) {
    const o = this.#options;
    const safe = READS.has(operation) || options.idempotencyKey !== undefined;
    return retrying(o, safe, () => {
      const fields = fieldsOf(params);
      const headers = {};
      if (o.style === 'form') {
        fields.set('apiuser', o.user);
        fields.set('apiauth', o.password);
      } else {
        headers['x-api-user'] = o.user;
        headers['x-api-password'] = o.password;
      }
      const reseller = options.reseller ?? o.reseller;
      if (reseller) headers['x-reseller'] = reseller;
      if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
      return post(o, path, fields, headers, options.timeoutMs, bare);
    });
  }
}

export class BerthHolderClient {
  #options;

  constructor(options) {
    const withPassword = options?.user && options.password;
    if (!options?.url || (!withPassword && !options.token))
      throw new TypeError('BerthHolderClient needs url, and user and password or a token');
    this.#options = { ...DEFAULTS, ...options };
  }

  /** Calls an operation of the account's holder by name; resolves with its `data`. */
  call(operation, params = {}, options = {}) {
    const o = this.#options;
    const safe = READS.has(operation) || options.idempotencyKey !== undefined;
    const authorization = o.token
      ? `Bearer ${o.token}`
      : `Basic ${Buffer.from(`${o.user}:${o.password}`).toString('base64')}`;
    return retrying(o, safe, () => {
      const headers = { authorization };
      if (options.idempotencyKey !== undefined) headers['idempotency-key'] = options.idempotencyKey;
      return post(o, `/api/v1/${operation}/`, fieldsOf(params), headers, options.timeoutMs, false);
    });
  }
}
