import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect } from 'node:net';
import { finished } from 'node:stream/promises';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import Fastify from 'fastify';
import { parseForm, registerBodyParsers } from '../../src/http/body.ts';

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

/** Sends `pieces` over one connection, a pause between them; resolves with the answer's text. */
function sendInPieces(port: number, pieces: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, async () => {
      for (const [i, piece] of pieces.entries()) {
        if (i > 0) await new Promise((wait) => setTimeout(wait, 50));
        socket.write(piece);
      }
    });
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
      if (/\r\n\r\n[\s\S]*\}$/.test(text)) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', reject);
  });
}

describe('a request body read by Berth', () => {
  it('ends and closes the request once read, sent with its headers or after them', async () => {
    const app = Fastify();
    registerBodyParsers(app);
    // Answers only once the request has ended and closed, as a request read to its end does.
    app.post('/', async (request) => {
      await finished(request.raw);
      if (!request.raw.closed) await once(request.raw, 'close');
      return { read: [...(request.body as Map<string, string[]>)] };
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (app.server.address() as AddressInfo).port;
      const body = 'a=1&b=2';
      const head = `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`;
      for (const pieces of [[head + body], [head, body]]) {
        const answer = await sendInPieces(port, pieces);
        assert.match(answer, /^HTTP\/1\.1 200/);
        assert.match(answer, /\{"read":\[\["a",\["1"\]\],\["b",\["2"\]\]\]\}$/);
      }
    } finally {
      await app.close();
    }
  });
});
