// The shape of src/ (docs/architecture.md): the entry points alone directly in src/, no circle of
// value imports, no file over 450 lines.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SRC = join(ROOT, 'src');

/** The files directly in src/: what starts Berth or builds it. */
const ENTRY_POINTS = ['app.ts', 'server.ts', 'services.ts'];

const MAX_LINES = 450;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) ? [path] : [];
  });
}

const files = sourceFiles(SRC);
const name = (path: string) => relative(SRC, path);

// What Node loads when the file runs: static imports and re-exports unless they are type-only,
// side-effect imports, and dynamic imports of a literal path. Comments are left out first.
const IMPORT =
  /^\s*(?:import|export)\s+(type\s+)?((?:[\w$]+\s*,?\s*)?(?:\{[^}]*\}|\*(?:\s+as\s+[\w$]+)?)?)\s*from\s*['"]([^'"]+)['"]/gm;
const SIDE_EFFECT = /^\s*import\s*['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

function withoutComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
}

/** True when every name a static import brings is a type (`import { type A, type B }`). */
function typesOnly(clause: string): boolean {
  const braces = /^\{([^}]*)\}$/.exec(clause.trim());
  if (!braces) return false;
  const names = braces[1]!
    .split(',')
    .map((each) => each.trim())
    .filter(Boolean);
  return names.length > 0 && names.every((each) => each.startsWith('type '));
}

function valueImports(file: string): string[] {
  const text = withoutComments(readFileSync(file, 'utf8'));
  const specifiers: string[] = [];
  for (const [, typeKeyword, clause, specifier] of text.matchAll(IMPORT))
    if (!typeKeyword && !typesOnly(clause!)) specifiers.push(specifier!);
  for (const [, specifier] of text.matchAll(SIDE_EFFECT)) specifiers.push(specifier!);
  for (const [, specifier] of text.matchAll(DYNAMIC)) specifiers.push(specifier!);
  return specifiers.filter((each) => each.startsWith('.')).map((each) => resolve(dirname(file), each));
}

const graph = new Map(files.map((file) => [file, valueImports(file)]));

/** The circles of value imports, one per strongly connected group of files (Tarjan). */
function circles(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string) => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        visit(next);
        low.set(file, Math.min(low.get(file)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, index.get(next)!));
    }
    if (low.get(file) === index.get(file)) {
      const group: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        group.push(member);
      } while (member !== file);
      const selfImport = graph.get(file)!.includes(file);
      if (group.length > 1 || selfImport) groups.push(group);
    }
  };
  for (const file of files) if (!index.has(file)) visit(file);
  return groups.map((group) => circleThrough(group));
}

/** One circle inside a strongly connected group, as the path of imports that closes it. */
function circleThrough(group: string[]): string[] {
  const inGroup = new Set(group);
  const start = group.sort()[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const next of graph.get(file)!) {
      if (next === start) {
        const path = [file];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start].map(name);
      }
      if (inGroup.has(next) && !from.has(next)) {
        from.set(next, file);
        queue.push(next);
      }
    }
  }
  return group.map(name);
}

describe('the architecture of src/', () => {
  it('finds the imports it checks', () => {
    const imports = graph.get(join(SRC, 'server.ts'))!.map(name);
    assert.ok(imports.includes('app.ts'), imports.join(', '));
  });

  it('has no circle of value imports', () => {
    assert.deepEqual(
      circles().map((circle) => circle.join(' → ')),
      [],
    );
  });

  it('has only the entry points directly in src/', () => {
    const loose = files.filter((file) => dirname(file) === SRC).map(name);
    assert.deepEqual(loose.sort(), [...ENTRY_POINTS].sort());
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const lines = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n').length;
    const long = files.filter((file) => lines(file) > MAX_LINES).map(name);
    assert.deepEqual(long, []);
  });
});
