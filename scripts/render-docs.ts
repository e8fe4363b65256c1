// npm run docs: rewrites docs/errors.md, the operation reference of docs/api.md and the client's
// types from the code.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderClientTypes, renderErrors, withOperations } from '../src/http/docs.ts';
import { apiOperations, customerOperations } from '../src/operations/registry.ts';

const root = new URL('../', import.meta.url);
writeFileSync(new URL('docs/errors.md', root), renderErrors());
const api = new URL('docs/api.md', root);
writeFileSync(api, withOperations(readFileSync(api, 'utf8'), apiOperations));
writeFileSync(new URL('client/operations.d.ts', root), renderClientTypes(apiOperations, customerOperations));
