// Every operation driven with generated hostile values: shell metacharacters, leading dashes, path
// climbing, CR/LF/NUL, over-long values, confusable Unicode, prototype keys, thousands of fields.
// None may give a 5xx, create anything, reach the provisioning driver, or break a log line.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { apiOperations } from '../src/operations/registry.ts';
import { createLogger } from '../src/services.ts';
import {
  ADMIN_PASSWORD,
  ADMIN_USER,
  createAccount,
  form,
  type Harness,
  recordingDriver,
  setup,
} from './helpers.ts';

const piece = fc.constantFrom(
  ';',
  '|',
  '&&',
  '$(id)',
  '`id`',
  '>',
  '<',
  '*',
  '?',
  '!',
  '{a,b}',
  "'",
  '"',
  '\\',
  '-rf',
  '--help',
  '../',
  '../../etc/passwd',
  '\r\n',
  '\n',
  '\r',
  '\u0000',
  '\t',
  '%00',
  '%0a',
  '\u202e',
  '\u200b',
  'а', // Cyrillic a
  'ｅ', // fullwidth e
  '__proto__',
  'constructor',
  ' ',
);

/** Always hostile: at least one piece that no value rule lets through. */
const hostile = fc
  .tuple(
    fc.array(fc.oneof(piece, fc.string({ maxLength: 8 })), { maxLength: 6 }),
    fc.constantFrom(
      '$(reboot)',
      '../x',
      '-x',
      '\u0000',
      '\r\nX-Injected: 1',
      ';rm -rf /',
      '\u202eexe.txt',
      'а'.repeat(3),
    ),
    fc.nat({ max: 3 }),
  )
  .map(([parts, core, longness]) => {
    const value = [...parts, core].join('');
    return longness === 3 ? value.repeat(Math.ceil(3000 / Math.max(1, value.length))) : value;
  });

const named = [...apiOperations.operations.values()].filter((op) => op.name !== '');

describe('hostile input', () => {
  const driver = recordingDriver();
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  let h: Harness;
  let counts: () => Promise<number[]>;

  before(async () => {
    // At debug, every request has its line, hostile paths and all.
    h = await setup({}, { driver, log: createLogger('debug', sink) });
    await createAccount(h, 'target');
    const { db } = h.services.store;
    const n = async (table: 'accounts' | 'packages' | 'api_users') =>
      Number(
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    counts = async () => [await n('accounts'), await n('packages'), await n('api_users')];
    driver.log.length = 0;
  });
  after(() => h.close());

  it('in every parameter of every operation: no 5xx, nothing created, nothing reaches the driver', async () => {
    const before = await counts();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...named),
        fc.array(hostile, { minLength: 1, maxLength: 40 }),
        async (op, values) => {
          const params: Record<string, string> = {};
          Object.keys(op.params).forEach((name, i) => {
            params[name] = values[i % values.length]!;
          });
          const reply = await h.request({
            url: `/api/v1/${op.name}/`,
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD, ...params }),
          });
          assert.ok(
            reply.statusCode < 500,
            `${op.name} answered ${reply.statusCode}: ${JSON.stringify(reply.body)}`,
          );
          // Refused: a value breaks its rule, or all of them together pass the 64 KiB limit.
          if (op.changesState && Object.keys(op.params).length > 0) {
            assert.ok([400, 413].includes(reply.statusCode), `${op.name} answered ${reply.statusCode}`);
          }
        },
      ),
      { numRuns: 300 },
    );
    assert.deepEqual(await counts(), before);
    assert.deepEqual(driver.log, []);
  });

  it('in JSON and multipart bodies, prototype keys and ten thousand fields', async () => {
    const before = await counts();
    const json = await h.request({
      url: '/api/v1/createacct/',
      headers: { 'content-type': 'application/json' },
      body: `{"apiuser":"${ADMIN_USER}","apiauth":"${ADMIN_PASSWORD}","__proto__":{"admin":true},"constructor":{"prototype":{}},"user":{"toString":1},"domain":["a.example"]}`,
    });
    assert.equal(json.statusCode, 400);
    const many = Array.from({ length: 10_000 }, (_, i) => `${i.toString(36)}=`).join('&');
    const fields = await h.request({
      url: '/api/v1/createacct/',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `${form({ apiuser: ADMIN_USER, apiauth: ADMIN_PASSWORD })}&${many}`,
    });
    assert.equal(fields.statusCode, 400);
    assert.equal(({} as Record<string, unknown>).admin, undefined);
    await fc.assert(
      fc.asyncProperty(hostile, hostile, async (name, value) => {
        const boundary = 'xYzBoundary';
        const body =
          `--${boundary}\r\nContent-Disposition: form-data; name="apiuser"\r\n\r\n${ADMIN_USER}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="apiauth"\r\n\r\n${ADMIN_PASSWORD}\r\n` +
          `--${boundary}\r\nContent-Disposition: form-data; name="${name.replace(/["\r\n]/g, '')}"\r\n\r\n${value}\r\n--${boundary}--\r\n`;
        const reply = await h.request({
          url: '/api/v1/createacct/',
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
          body,
        });
        assert.ok(reply.statusCode < 500);
      }),
      { numRuns: 100 },
    );
    assert.deepEqual(await counts(), before);
  });

  it('in the credential and reseller headers', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, hostile, async (user, reseller) => {
        // Node itself refuses control characters in header values; everything else goes through.
        const clean = (text: string) => text.replace(/\p{Cc}/gu, '') || 'x';
        const reply = await h.request({
          url: '/api/v1/listaccts/',
          headers: {
            'x-api-user': clean(user),
            'x-api-password': ADMIN_PASSWORD,
            'x-reseller': clean(reseller),
          },
          remoteAddress: '203.0.113.200',
        });
        assert.ok([403, 429].includes(reply.statusCode), String(reply.statusCode));
      }),
      { numRuns: 60 },
    );
  });

  it('keeps every log entry on one line of JSON, with no password in it', () => {
    assert.ok(lines.length > 0);
    for (const line of lines) {
      assert.ok(line.endsWith('\n') && line.indexOf('\n') === line.length - 1, line.slice(0, 200));
      JSON.parse(line);
      assert.ok(!line.includes(ADMIN_PASSWORD));
    }
  });
});

describe('unknown user and wrong password', () => {
  it('cost the same: one password hash each, and the same answer', async () => {
    const h = await setup();
    try {
      const pool = h.services.crypt;
      let hashes = 0;
      const verify = pool.verify.bind(pool);
      pool.verify = (password: string, hash: string) => {
        hashes++;
        return verify(password, hash);
      };
      const call = (user: string) =>
        h.request({
          url: '/api/v1/listaccts/',
          headers: { 'x-api-user': user, 'x-api-password': 'not-the-password' },
        });
      const unknown = await call('nosuchuser');
      assert.equal(hashes, 1);
      const wrong = await call(ADMIN_USER);
      assert.equal(hashes, 2);
      assert.deepEqual(unknown.body, wrong.body);
      assert.equal(unknown.statusCode, wrong.statusCode);
    } finally {
      await h.close();
    }
  });
});
