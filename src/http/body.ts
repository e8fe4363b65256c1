// Request bodies become RawParams: every value given for each name, in order, so that a parameter
// given twice can be refused. Form-encoded, multipart (as PHP cURL sends an array) and JSON.
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { type ApiError, apiError } from '../core/errors.ts';
import { NotText, type RawParams } from '../operations/operation.ts';

/** What an API call's body may hold (CONTRACT §1): 413 over it. */
export const BODY_LIMIT = 64 * 1024;

type Params = Map<string, (string | NotText)[]>;

function add(params: Params, name: string, value: string | NotText): void {
  const list = params.get(name);
  if (list) list.push(value);
  else params.set(name, [value]);
}

export function parseForm(body: string): RawParams {
  const params: Params = new Map();
  // Without an escape (% or +), a leading ? or a surrogate, the form is its pairs as written, as
  // URLSearchParams reads them: split here, without the object and the copies it makes, which every
  // call with credentials in its body would pay.
  if (!NOT_AS_WRITTEN.test(body)) {
    for (let start = 0; start <= body.length; ) {
      let end = body.indexOf('&', start);
      if (end === -1) end = body.length;
      if (end > start) {
        const equals = body.indexOf('=', start);
        if (equals === -1 || equals > end) add(params, body.slice(start, end), '');
        else add(params, body.slice(start, equals), body.slice(equals + 1, end));
      }
      start = end + 1;
    }
    return params;
  }
  for (const [name, value] of new URLSearchParams(body)) add(params, name, value);
  return params;
}

const NOT_AS_WRITTEN = /^\?|[%+\uD800-\uDFFF]/;

export async function parseMultipart(body: Buffer, contentType: string): Promise<RawParams> {
  let form: FormData;
  try {
    form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  } catch {
    throw bodyError('the multipart body is malformed');
  }
  const params: Params = new Map();
  for (const [name, value] of form)
    add(params, name, typeof value === 'string' ? value : new NotText('a file'));
  return params;
}

/**
 * The keys of a JSON text's top-level object, each as often as it is written (JSON.parse keeps
 * only the last of a repeated key). `text` must already have parsed.
 */
function topLevelKeys(text: string): string[] {
  const keys: string[] = [];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      const start = i;
      for (i++; text[i] !== '"'; i++) if (text[i] === '\\') i++;
      if (depth !== 1) continue;
      let next = i + 1;
      while (text[next] === ' ' || text[next] === '\t' || text[next] === '\n' || text[next] === '\r') next++;
      if (text[next] === ':') keys.push(JSON.parse(text.slice(start, i + 1)) as string);
    } else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
  }
  return keys;
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
  // A key written twice counts as a parameter given twice, refused like a repeated form field.
  const written = new Map<string, number>();
  for (const key of topLevelKeys(body)) written.set(key, (written.get(key) ?? 0) + 1);
  for (const [name, value] of Object.entries(parsed)) {
    const text =
      typeof value === 'string' ? value : typeof value === 'number' ? String(value) : notText(value);
    for (let n = written.get(name) ?? 1; n > 0; n--) add(params, name, text);
  }
  return params;
}

/** What a JSON value other than a string or a number is, as a message says it. */
function notText(value: unknown): NotText {
  if (typeof value === 'boolean') return new NotText(`${value} (a JSON boolean)`);
  if (value === null) return new NotText('null');
  return new NotText(Array.isArray(value) ? 'a JSON list' : 'a JSON object');
}

function bodyError(reason: string): ApiError {
  return apiError('invalid_parameter', { reason });
}

type Done = (error: Error | null, body?: unknown) => void;

/**
 * Reads a request's body, at most `limit` bytes, and hands it to `parse`. A body sent with its
 * headers, as a billing call's is, is in the request's buffer whole once the packet it came in has
 * been read: it is then taken from there at once, without listeners and the stream's turns of
 * flowing. Only a body of a declared length can be known to be whole before its end is read.
 */
function readBody(
  request: IncomingMessage,
  parse: (body: Buffer, done: Done) => void,
  done: Done,
  limit = BODY_LIMIT,
): void {
  const declared = request.headers['content-length'];
  const length = declared === undefined ? Number.NaN : Number(declared);
  if (length > limit) {
    done(tooLarge(limit));
    return;
  }
  queueMicrotask(() => {
    if (request.readableLength === length) {
      const body = request.read() as Buffer | null;
      // Read before the parser has marked the request complete: left flowing, the request still
      // ends and closes as one read to its end does, once it is.
      request.resume();
      return parse(body ?? EMPTY, done);
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      request.removeListener('data', onData);
      request.removeListener('end', onEnd);
      request.removeListener('error', onError);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        stop();
        done(tooLarge(limit));
      } else chunks.push(chunk);
    };
    const onEnd = () => {
      stop();
      parse(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, received), done);
    };
    const onError = (error: Error) => {
      stop();
      done(Object.assign(error, { statusCode: 400 }));
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}

const EMPTY = Buffer.alloc(0);

function tooLarge(limit: number): ApiError {
  return apiError('payload_too_large', { limit });
}

/** A parser of text that may refuse it. */
function ofText(parse: (text: string) => RawParams) {
  return (body: Buffer, done: Done) => {
    let params: RawParams;
    try {
      params = parse(body.toString('utf8'));
    } catch (error) {
      return done(error as Error);
    }
    done(null, params);
  };
}

const form = ofText(parseForm);
const json = ofText(parseJson);

/** A body as text, read by readBody: for parsers of their own (the fleet's signed JSON). */
export function textBody(request: IncomingMessage, done: Done, limit = BODY_LIMIT): void {
  readBody(request, (body, done) => done(null, body.toString('utf8')), done, limit);
}

/**
 * Replaces Fastify's body parsers with ours; any other content type is 415. Each reads the request
 * itself (readBody), not Fastify's payload stream: Berth has no preParsing hook to stand between.
 */
export function registerBodyParsers(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/x-www-form-urlencoded', (request, _payload, done) =>
    readBody(request.raw, form, done),
  );
  app.addContentTypeParser('application/json', (request, _payload, done) =>
    readBody(request.raw, json, done),
  );
  app.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
    const type = String(request.headers['content-type']);
    readBody(
      request.raw,
      (body, done) =>
        parseMultipart(body, type).then(
          (params) => done(null, params),
          (error: Error) => done(error),
        ),
      done,
    );
  });
  app.addContentTypeParser('*', (request, _payload, done) => {
    readBody(
      request.raw,
      (body, done) => {
        if (body.length === 0) return done(null, new Map());
        const type = String(request.headers['content-type'] ?? 'none')
          .split(';')[0]!
          .trim()
          .slice(0, 100);
        done(apiError('unsupported_media_type', { type }));
      },
      done,
    );
  });
}
