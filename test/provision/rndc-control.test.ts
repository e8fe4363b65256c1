// BIND's control channel as Berth speaks it (src/provision/linux/dns/rndc.ts), against a server
// that speaks it as BIND does: the greeting's nonce, each message signed with the key, the answer's
// signature checked, BIND's refusal worded as rndc words it; a forged answer is refused.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import {
  decodeEntries,
  decodeMessage,
  encodeEntries,
  encodeMessage,
  parseRndcKey,
  type RndcKey,
  rndcControl,
} from '../../src/provision/linux/dns/rndc.ts';
import { tempDir } from '../helpers.ts';

const SECRET = 'c2VjcmV0IG9mIHRoZSB0ZXN0J3MgY29udHJvbCBjaGFubmVs';
const KEY_TEXT = `key "rndc-key" {\n\talgorithm hmac-sha256;\n\tsecret "${SECRET}";\n};\n`;
const bytes = (text: string) => Buffer.from(text);
/** A table as plain objects, in its order, whatever their prototypes. */
const plain = (value: unknown): unknown =>
  Buffer.isBuffer(value)
    ? value
    : Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, plain(v)]));

/** A control channel: answers `null` with a nonce, then each command as `answer` says. */
function fakeBind(key: RndcKey, answer: (command: string) => Record<string, string>, forge = false) {
  const commands: string[] = [];
  const server = createServer((socket) => {
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const body = buffered.subarray(4, 4 + buffered.readUInt32BE(0));
        buffered = buffered.subarray(4 + body.length);
        const message = decodeMessage(key, body);
        const ctrl = message._ctrl as Record<string, Buffer>;
        const type = (message._data as Record<string, Buffer>).type!.toString();
        if (type !== 'null') {
          assert.equal(ctrl._nonce?.toString(), '4242', 'a command carries the greeting’s nonce');
          commands.push(type);
        }
        const data = type === 'null' ? { result: '0' } : answer(type);
        const reply = encodeMessage(forge ? { ...key, secret: Buffer.from('forged') } : key, {
          _ctrl: { ...ctrl, _rpl: bytes('1'), _nonce: bytes('4242') },
          _data: Object.fromEntries([
            ['type', bytes(type)],
            ...Object.entries(data).map(([k, v]) => [k, bytes(v)]),
          ]),
        });
        socket.write(reply);
      }
    });
  });
  return { server, commands };
}

const listen = (server: Server) =>
  new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );

describe('BIND’s control channel', () => {
  const dir = tempDir('berth-rndc-');
  const keyFile = join(dir, 'rndc.key');
  const key = parseRndcKey(KEY_TEXT)!;
  const servers: Server[] = [];
  before(() => writeFileSync(keyFile, KEY_TEXT));
  after(() => {
    for (const server of servers) server.close();
  });

  it('reads the key rndc-confgen writes, and no key it cannot sign with', () => {
    assert.deepEqual(key, { algorithm: 'hmac-sha256', secret: Buffer.from(SECRET, 'base64') });
    assert.equal(parseRndcKey('key "k" { algorithm hmac-whirlpool; secret "AAAA"; };'), null);
    assert.equal(parseRndcKey('# no key here'), null);
  });

  it('encodes and decodes any table of names and values', () => {
    const name = fc
      .string({ minLength: 1, maxLength: 20 })
      .filter((s) => Buffer.byteLength(s, 'latin1') === s.length && /^[\x20-\x7e]+$/.test(s));
    const leaf = fc.uint8Array({ maxLength: 40 }).map((a) => Buffer.from(a));
    const table = fc.letrec((tie) => ({
      table: fc.dictionary(name, fc.oneof({ depthSize: 'small' }, leaf, tie('table')), { maxKeys: 4 }),
    })).table;
    fc.assert(
      fc.property(table, (value) => {
        const entries = encodeEntries(value as never);
        assert.deepEqual(plain(decodeEntries(entries).table), plain(value));
      }),
    );
  });

  it('runs a command: the greeting’s nonce, then the command, BIND’s text as its answer', async () => {
    const bind = fakeBind(
      key,
      (command): Record<string, string> =>
        command.startsWith('zonestatus')
          ? { result: '0', text: 'name: a.example\nserial: 2026010101' }
          : { result: '0' },
    );
    servers.push(bind.server);
    const control = rndcControl(`127.0.0.1:${await listen(bind.server)}`, keyFile);
    assert.equal(await control.command('zonestatus a.example'), 'name: a.example\nserial: 2026010101');
    await control.command('addzone a.example { type primary; file "/etc/bind/zones/a.example.db"; };');
    assert.deepEqual(bind.commands, [
      'zonestatus a.example',
      'addzone a.example { type primary; file "/etc/bind/zones/a.example.db"; };',
    ]);
  });

  it('words BIND’s refusal as rndc does', async () => {
    const bind = fakeBind(key, () => ({
      result: '23',
      err: 'not found',
      text: "no matching zone 'x.example' in any view",
    }));
    servers.push(bind.server);
    const control = rndcControl(`127.0.0.1:${await listen(bind.server)}`, keyFile);
    await assert.rejects(control.command('delzone x.example'), {
      message: "rndc: 'delzone' failed: not found\nno matching zone 'x.example' in any view",
    });
  });

  it('refuses an answer not signed with the key', async () => {
    const bind = fakeBind(key, () => ({ result: '0' }), true);
    servers.push(bind.server);
    const control = rndcControl(`127.0.0.1:${await listen(bind.server)}`, keyFile);
    await assert.rejects(control.command('status'), /signature does not match the key/);
  });
});
