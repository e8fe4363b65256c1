// Every API answer a test receives through the harness is checked against the OpenAPI document:
// its status is one the operation declares, an error's code is one it lists for that status, and
// `data` matches the operation's result schema. A new answer shape or error fails the suite until
// results.ts or the operation's errors say so.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument } from '../src/http/openapi.ts';
import { apiOperations, customerOperations } from '../src/operations/registry.ts';

type Responses = Record<string, { content: { 'application/json': { schema: object } } }>;
type Document = {
  paths: Record<string, { post: { responses: Responses } }>;
  components: { schemas: Record<string, object> };
};

const docs = {
  api: openApiDocument(apiOperations, { holders: customerOperations }) as Document,
  customer: openApiDocument(customerOperations, { customer: true }) as Document,
};
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const validators = new Map<string, ValidateFunction>();

function validator(side: keyof typeof docs, path: string, status: string): ValidateFunction | undefined {
  const key = `${side} ${path} ${status}`;
  const doc = docs[side];
  let validate = validators.get(key);
  if (!validate) {
    const response = doc.paths[path]?.post.responses[status];
    if (!response) return undefined;
    const schema = response.content['application/json'].schema;
    validate = ajv.compile({ ...schema, components: doc.components });
    validators.set(key, validate);
  }
  return validate;
}

/**
 * Checks one answer of POST `url` on a listener of `side`; other methods and paths outside the
 * API are left alone.
 */
export function checkAnswer(
  method: string,
  url: string,
  status: number,
  body: unknown,
  side: keyof typeof docs = 'api',
): void {
  const match = /^\/api(?:\/v1)?(\/(?:account\/)?(?:[^/?]+\/)?)(?:\?.*)?$/.exec(url);
  if (method !== 'POST' || !match || !docs[side].paths[match[1]!]) return;
  const path = match[1]!;
  const validate = validator(side, path, String(status));
  assert.ok(validate, `${path} answered ${status}, a status its OpenAPI description does not list`);
  assert.ok(
    validate(body),
    `${path} answered ${status} outside its OpenAPI description: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
  );
}
