import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseForm } from '../../src/http/body.ts';

/** What URLSearchParams reads from a form: every value of each name, in order. */
function asUrlSearchParams(body: string): Map<string, string[]> {
  const params = new Map<string, string[]>();
  for (const [name, value] of new URLSearchParams(body))
    params.set(name, [...(params.get(name) ?? []), value]);
  return params;
}

/** Forms built from `special` characters, and any others. */
const formText = (...special: string[]) =>
  fc.string({
    unit: fc.oneof(
      fc.constantFrom('&', '=', 'a', 'b', '2', '0', 'F', ' ', 'é', '😀', ...special),
      fc.string({ minLength: 1, maxLength: 1, unit: 'grapheme' }),
    ),
    maxLength: 40,
  });

describe('form bodies', () => {
  it('read as URLSearchParams reads them, with or without escapes', () => {
    fc.assert(
      fc.property(fc.oneof(formText(), formText('?', '%', '+', '\uD800', '\uDC00')), (body) => {
        assert.deepEqual(parseForm(body), asUrlSearchParams(body));
      }),
      { numRuns: 2000 },
    );
  });

  it('keep empty names and values, a name without =, and every value of a repeated name', () => {
    assert.deepEqual(
      parseForm('apiuser=billing&apiauth=s3cret&&=x&flag&user=a&user=b&empty='),
      new Map([
        ['apiuser', ['billing']],
        ['apiauth', ['s3cret']],
        ['', ['x']],
        ['flag', ['']],
        ['user', ['a', 'b']],
        ['empty', ['']],
      ]),
    );
    assert.deepEqual(
      parseForm('?a=b%20c+d&e=%ZZ'),
      new Map([
        ['a', ['b c d']],
        ['e', ['%ZZ']],
      ]),
    );
    assert.deepEqual(parseForm(''), new Map());
  });
});
