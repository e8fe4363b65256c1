// Every API answer a test receives through the harness is checked against the OpenAPI document:
// its status is one the operation declares, an error's code is one it lists for that status, and
// `data` matches the operation's result schema. A new answer shape or error fails the suite until
// results.ts or the operation's errors say so.
import assert from 'node:assert/strict';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { openApiDocument } from '../src/http/openapi.ts';
import { apiOperations } from '../src/operations/registry.ts';

type Responses = Record<string, { content: { 'application/json': { schema: object } } }>;
type Document = {
  paths: Record<string, { post: { responses: Responses } }>;
  components: { schemas: Record<string, object> };
};

const doc = openApiDocument(apiOperations) as Document;
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const validators = new Map<string, ValidateFunction>();

function validator(path: string, status: string): ValidateFunction | undefined {
  const key = `${path} ${status}`;
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

/** Checks one answer of POST `url`; other methods and paths outside the API are left alone. */
export function checkAnswer(method: string, url: string, status: number, body: unknown): void {
  const match = /^\/api(?:\/v1)?(\/(?:[^/?]+\/)?)(?:\?.*)?$/.exec(url);
  if (method !== 'POST' || !match || !doc.paths[match[1]!]) return;
  const path = match[1]!;
  const validate = validator(path, String(status));
  assert.ok(validate, `${path} answered ${status}, a status its OpenAPI description does not list`);
  assert.ok(
    validate(body),
    `${path} answered ${status} outside its OpenAPI description: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
  );
}
