// npm run docs: rewrites docs/errors.md and the README's operation reference from the code.
import { readFileSync, writeFileSync } from 'node:fs';
import { renderClientTypes, renderErrors, withOperations } from '../src/http/docs.ts';

const root = new URL('../', import.meta.url);
writeFileSync(new URL('docs/errors.md', root), renderErrors());
const readme = new URL('README.md', root);
writeFileSync(readme, withOperations(readFileSync(readme, 'utf8')));
writeFileSync(new URL('client/operations.d.ts', root), renderClientTypes());
