// The Berth client for Node.js: both credential styles, X-RESELLER, Idempotency-Key, timeouts,
// retries of calls that are safe to repeat, and errors that carry Berth's error code.
// Plain JavaScript, so that it runs from node_modules; its types are in index.d.ts.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

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

export class BerthClient {
  #options;

  constructor(options) {
    if (!options?.url || !options.user || !options.password)
      throw new TypeError('BerthClient needs url, user and password');
    this.#options = { style: 'header', timeoutMs: 30_000, retries: 2, ...options };
  }

  /** Calls an operation by name; resolves with its `data`, or rejects with a BerthError. */
  async call(operation, params = {}, options = {}) {
    const safe = READS.has(operation) || options.idempotencyKey !== undefined;
    const attempts = 1 + (safe ? this.#options.retries : 0);
    let last;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        return await this.#send(operation, params, options);
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

  #send(operation, params, options) {
    const o = this.#options;
    const url = new URL(`/api/v1/${operation ? `${operation}/` : ''}`, o.url);
    const fields = new URLSearchParams();
    for (const [key, value] of Object.entries(params))
      if (value !== undefined) fields.set(key, String(value));
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
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
    const body = fields.toString();
    headers['content-length'] = String(Buffer.byteLength(body));
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise((resolve, reject) => {
      const req = send(
        url,
        {
          method: 'POST',
          headers,
          ca: o.ca,
          rejectUnauthorized: o.rejectUnauthorized ?? true,
          servername: o.servername,
          signal: AbortSignal.timeout(options.timeoutMs ?? o.timeoutMs),
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
            if (res.statusCode === 200) return resolve(operation === '' ? parsed : parsed.data);
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
}
