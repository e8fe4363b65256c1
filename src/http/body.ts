// Request bodies become RawParams: every value given for each name, in order, so that a parameter
// given twice can be refused. Form-encoded, multipart (as PHP cURL sends an array) and JSON.
import type { FastifyInstance } from 'fastify';
import { type ApiError, apiError } from '../errors.ts';
import type { RawParams } from '../operations/operation.ts';

export const BODY_LIMIT = 64 * 1024;

type Params = Map<string, (string | null)[]>;

function add(params: Params, name: string, value: string | null): void {
  const list = params.get(name);
  if (list) list.push(value);
  else params.set(name, [value]);
}

export function parseForm(body: string): RawParams {
  const params: Params = new Map();
  for (const [name, value] of new URLSearchParams(body)) add(params, name, value);
  return params;
}

export async function parseMultipart(body: Buffer, contentType: string): Promise<RawParams> {
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw bodyError('the multipart body is malformed');
  }
  const params: Params = new Map();
  for (const [name, value] of form) add(params, name, typeof value === 'string' ? value : null);
  return params;
}

export function parseJson(body: string): RawParams {
  const params: Params = new Map();
  if (body.trim() === '') return params;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw bodyError('the JSON body does not parse');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw bodyError('a JSON body must be an object of strings or numbers');
  }
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === 'string') add(params, name, value);
    else if (typeof value === 'number' && Number.isFinite(value)) add(params, name, String(value));
    else add(params, name, null);
  }
  return params;
}

function bodyError(reason: string): ApiError {
  return apiError('invalid_parameter', { reason });
}

/** Replaces Fastify's body parsers with ours; any other content type is 415. */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, parseForm(String(body)));
  });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, parseJson(String(body)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  app.addContentTypeParser('multipart/form-data', { parseAs: 'buffer' }, (req, body, done) => {
    parseMultipart(body as Buffer, String(req.headers['content-type'])).then(
      (params) => done(null, params),
      (error: Error) => done(error, undefined),
    );
  });
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (req, body, done) => {
    if ((body as Buffer).length === 0) return done(null, new Map());
    const type = String(req.headers['content-type'] ?? 'none')
      .split(';')[0]!
      .trim()
      .slice(0, 100);
    done(apiError('unsupported_media_type', { type }), undefined);
  });
}
