import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, it } from 'node:test';
import { SERVE_NODE_FLAGS } from '../src/config/serve-flags.ts';
import { catalogue } from '../src/core/errors.ts';
import { renderClientTypes, renderErrors, withOperations } from '../src/http/docs.ts';
import { apiOperations, customerOperations } from '../src/operations/registry.ts';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

describe('the generated docs', () => {
  it('docs/errors.md is the rendering of the error catalogue (run npm run docs)', () => {
    assert.equal(read('docs/errors.md'), renderErrors());
    for (const code of Object.keys(catalogue))
      assert.ok(read('docs/errors.md').includes(`\`${code}\``), code);
  });

  it('client/operations.d.ts is the rendering of the registry (run npm run docs)', () => {
    assert.equal(read('client/operations.d.ts'), renderClientTypes(apiOperations, customerOperations));
  });

  it("docs/api.md's operation reference is current and names every operation (run npm run docs)", () => {
    const api = read('docs/api.md');
    assert.equal(api, withOperations(api, apiOperations));
    for (const name of apiOperations.operations.keys()) {
      if (name !== '') assert.ok(api.includes(`/api/v1/${name}/`), name);
    }
  });
});

describe('how the server is started', () => {
  it('npm start runs berth serve with the Node options every start has (deploy/berth.service: test/cli/init.test.ts)', () => {
    const start = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts.start;
    assert.equal(start, `node ${SERVE_NODE_FLAGS.join(' ')} bin/berth.js serve`);
  });
});

/** The pages a reader follows links through: the README and every page of docs/. */
const pages = [
  'README.md',
  ...readdirSync(new URL('../docs/', import.meta.url)).map((name) => `docs/${name}`),
].filter((path) => path.endsWith('.md'));

/** A page without its fenced code blocks, where # and brackets are not Markdown. */
function withoutFences(text: string): string {
  return text.replace(/^ *```[^\n]*\n[\s\S]*?^ *```$/gm, '');
}

/** A page's prose: no fenced code blocks and no inline code. */
function prose(text: string): string {
  return withoutFences(text).replace(/`[^`\n]*`/g, '');
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as -, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const found = new Set<string>();
  const headings = withoutFences(text).replace(/`([^`\n]*)`/g, '$1');
  for (const [, heading] of headings.matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = heading!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    found.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return found;
}

describe('the documentation', () => {
  it('README.md stays short: under 250 lines', () => {
    const lines = read('README.md').split('\n').length - 1;
    assert.ok(lines < 250, `README.md has ${lines} lines`);
  });

  it('README.md links every page of docs/', () => {
    const readme = read('README.md');
    for (const page of pages.filter((path) => path.startsWith('docs/')))
      assert.ok(readme.includes(`](${page})`), `README.md links ${page}`);
  });

  it('every relative link in README.md and docs/ leads to a file that exists, and to a heading it has', () => {
    let links = 0;
    for (const page of pages) {
      for (const [, target] of prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue;
        links++;
        const [file, anchor] = target!.split('#') as [string, string | undefined];
        const path = file === '' ? page : normalize(join(dirname(page), file));
        assert.ok(!path.startsWith('..'), `${page}: ${target} leads outside the repository`);
        assert.ok(existsSync(new URL(`../${path}`, import.meta.url)), `${page}: ${target} (no ${path})`);
        if (anchor !== undefined && path.endsWith('.md'))
          assert.ok(anchors(read(path)).has(anchor), `${page}: ${target} (no such heading in ${path})`);
      }
    }
    assert.ok(links > pages.length, `${links} relative links found`);
  });
});
