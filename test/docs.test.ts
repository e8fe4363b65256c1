import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SERVE_NODE_FLAGS } from '../src/config/serve-flags.ts';
import { catalogue } from '../src/core/errors.ts';
import { renderClientTypes, renderErrors, withOperations } from '../src/http/docs.ts';
import { operations } from '../src/operations/registry.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('the generated docs', () => {
  it('docs/errors.md is the rendering of the error catalogue (run npm run docs)', () => {
    assert.equal(read('docs/errors.md'), renderErrors());
    for (const code of Object.keys(catalogue))
      assert.ok(read('docs/errors.md').includes(`\`${code}\``), code);
  });

  it('client/operations.d.ts is the rendering of the registry (run npm run docs)', () => {
    assert.equal(read('client/operations.d.ts'), renderClientTypes());
  });

  it("the README's operation reference is current and names every operation (run npm run docs)", () => {
    const readme = read('README.md');
    assert.equal(readme, withOperations(readme));
    for (const name of operations.keys()) {
      if (name !== '') assert.ok(readme.includes(`/api/v1/${name}/`), name);
    }
  });
});

describe('how the server is started', () => {
  it('npm start runs berth serve with the Node options every start has (deploy/berth.service: test/cli/init.test.ts)', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    assert.equal(start, `node ${SERVE_NODE_FLAGS.join(' ')} bin/berth.js serve`);
  });
});
