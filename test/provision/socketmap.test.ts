// The tables Berth serves Postfix over its socketmap protocol: asked by Postfix's own client
// (postmap -q), with the keys Postfix would have tried itself in a table of addresses, and closed
// to a client that sends anything but the protocol.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { PostfixTable } from '../../src/provision/linux/mail/lines.ts';
import {
  addressKeys,
  answer,
  literalAddress,
  socketmapServer,
  systemAliases,
} from '../../src/provision/linux/mail/socketmap.ts';

const run = promisify(execFile);

const TABLES: Partial<Record<PostfixTable, Record<string, string>>> = {
  domains: { 'ann.example': 'OK' },
  mailboxes: { 'ann@ann.example': 'OK', 'info@ann.example': 'OK' },
  senders: { 'info@ann.example': 'info@ann.example, ann', '@ann.example': 'ann, ann@ann.example' },
  aliases: { 'team@ann.example': 'ann@ann.example, bea@elsewhere.example' },
  localAliases: { ann: 'ann@ann.example', postmaster: 'postmaster@pm.example' },
};
const SETTINGS = {
  delimiters: '+',
  isLocal: (domain: string) => ['localhost', 'host.example', '[127.0.0.1]'].includes(domain),
  isSystemAlias: (local: string) => ['postmaster', 'abuse'].includes(local),
};
const lookup = (table: PostfixTable, key: string) => TABLES[table]?.[key] ?? null;

describe('the socketmap tables', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-socketmap-'));
  const socket = join(dir, 'tables.sock');
  const served = socketmapServer(
    (request) => {
      if (request.startsWith('domains boom')) throw new Error('boom');
      return answer(request, lookup, SETTINGS);
    },
    () => {},
  );
  before(() => new Promise<void>((resolve) => served.server.listen(socket, resolve)));
  after(async () => {
    for (const connection of served.connections) connection.destroy();
    await new Promise((resolve) => served.server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  /** What Postfix's own client finds, or null for nothing. */
  const postmap = async (name: string, key: string) => {
    try {
      return (await run('/usr/sbin/postmap', ['-q', key, `socketmap:unix:${socket}:${name}`])).stdout.trim();
    } catch (error) {
      if ((error as { code?: number }).code === 1) return null;
      throw error;
    }
  };

  it('answer Postfix’s client, any case of a key', async () => {
    assert.equal(await postmap('domains', 'ANN.example'), 'OK');
    assert.equal(await postmap('domains', 'bea.example'), null);
    assert.equal(await postmap('local-aliases', 'ann'), 'ann@ann.example');
    assert.equal(await postmap('local-aliases', 'bea'), null);
  });

  it('try the keys Postfix would in a table of addresses: the extension and the catch-all', async () => {
    assert.deepEqual(addressKeys('bob+news@x.example', '+-'), [
      'bob+news@x.example',
      'bob@x.example',
      '@x.example',
    ]);
    assert.deepEqual(addressKeys('bob-a+b@x.example', '+-'), [
      'bob-a+b@x.example',
      'bob@x.example',
      '@x.example',
    ]);
    assert.deepEqual(addressKeys('bob@x.example', ''), ['bob@x.example', '@x.example']);
    assert.deepEqual(addressKeys('+bob@x.example', '+'), ['+bob@x.example', '@x.example']);
    assert.deepEqual(addressKeys('alice', '+'), ['alice']);
    assert.equal(await postmap('mailboxes', 'info+list@ann.example'), 'OK');
    assert.equal(await postmap('mailboxes', 'nobody@ann.example'), null);
    assert.equal(await postmap('senders', 'info@ann.example'), 'info@ann.example, ann');
    assert.equal(await postmap('senders', 'Someone@Ann.example'), 'ann, ann@ann.example');
    // A domain is looked up as itself only.
    assert.equal(await postmap('domains', 'www.ann.example'), null);
  });

  it('alias an account’s system user at the server’s own domains to its mailbox, no one else', async () => {
    assert.equal(await postmap('aliases', 'team@ann.example'), 'ann@ann.example, bea@elsewhere.example');
    assert.equal(await postmap('aliases', 'ann@localhost'), 'ann@ann.example');
    assert.equal(await postmap('aliases', 'Ann+bounce@host.example'), 'ann@ann.example');
    // At another domain, or the system's own users: as they were.
    assert.equal(await postmap('aliases', 'ann@elsewhere.example'), null);
    assert.equal(await postmap('aliases', 'root@localhost'), null);
    assert.equal(await postmap('aliases', '@localhost'), null);
    assert.equal(await postmap('aliases', 'ann@[127.0.0.1]'), 'ann@ann.example');
    // A name the system's aliases give (an account may be called postmaster) goes by them.
    assert.equal(await postmap('aliases', 'postmaster@localhost'), null);
    assert.equal(await postmap('aliases', 'postmaster+x@localhost'), null);
    // Case is folded as Postfix folds it, A to Z alone (U+212A, the Kelvin sign, is no k).
    assert.equal(await postmap('domains', '\u212Ann.example'), null);
  });

  it('refuse a table it does not serve, and fail for the moment when a lookup fails', () => {
    assert.equal(answer('local-senders ann', lookup, SETTINGS), 'PERM no such table');
    assert.equal(answer('nospace', lookup, SETTINGS), 'PERM no such table');
    assert.equal(answer('senders @ann.example', lookup, SETTINGS), 'OK ann, ann@ann.example');
    assert.equal(answer('domains ', lookup, SETTINGS), 'NOTFOUND ');
    const huge = () => 'x'.repeat(200_000);
    assert.match(answer('domains a', huge, SETTINGS), /^PERM /);
  });

  it('read the names the system’s aliases give, again when the file changes', () => {
    const file = join(dir, 'aliases');
    writeFileSync(
      file,
      '# See man 5 aliases\npostmaster:    root\n"Abuse": root,\n  continued@example.net\nno colon here\n',
    );
    const named = systemAliases(file);
    assert.deepEqual(
      ['postmaster', 'abuse', 'continued@example.net', 'no colon her', 'root', '# see man 5 aliases'].map(
        named,
      ),
      [true, true, false, false, false, false],
    );
    writeFileSync(file, 'hostmaster: root\n');
    utimesSync(file, new Date(), new Date(Date.now() + 5_000));
    assert.deepEqual(['postmaster', 'hostmaster'].map(named), [false, true]);
    assert.equal(systemAliases(join(dir, 'none'))('postmaster'), false);
  });

  it('read an address literal’s address, and nothing else as one', () => {
    assert.equal(literalAddress('[192.0.2.1]'), '192.0.2.1');
    assert.equal(literalAddress('[IPv6:2001:db8::1]'), '2001:db8::1');
    assert.equal(literalAddress('192.0.2.1'), null);
    assert.equal(literalAddress('[192.0.2.1].example'), null);
  });

  /** What the server sends back for `bytes`, and whether it closed the connection. */
  const exchange = (chunks: string[]) =>
    new Promise<{ reply: string; closed: boolean }>((resolve) => {
      const client = connect(socket);
      let reply = '';
      let closed = false;
      client.on('data', (data) => {
        reply += data;
      });
      client.on('close', () => {
        closed = true;
        resolve({ reply, closed });
      });
      client.on('connect', async () => {
        for (const chunk of chunks) {
          client.write(chunk);
          await new Promise((r) => setTimeout(r, 20));
        }
        setTimeout(() => {
          if (!closed) resolve({ reply, closed });
          client.destroy();
        }, 100);
      });
    });

  it('take requests split across writes and several in one, and close on anything else', async () => {
    assert.deepEqual(await exchange(['19:domains ann', '.example,', '11:domains b.x,']), {
      reply: '5:OK OK,9:NOTFOUND ,',
      closed: false,
    });
    assert.equal((await exchange(['14:domains boom.x,'])).reply, '22:TEMP the lookup failed,');
    for (const garbage of ['GET / HTTP/1.0\r\n', '99999999:x', ':x,', '5:abcdeX', '9000:'])
      assert.deepEqual(await exchange([garbage]), { reply: '', closed: true }, garbage);
  });

  it('stop reading from a client that sends and does not read its replies', async () => {
    const client = connect(socket);
    client.pause();
    await new Promise((resolve) => client.on('connect', resolve));
    const request = '19:domains ann.example,'.repeat(2000);
    for (let i = 0; i < 100; i++) client.write(request);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const server = [...served.connections][0];
    assert.ok(server?.isPaused(), 'the server stopped reading');
    assert.ok(server!.writableLength < 2 * 1024 * 1024, `${server!.writableLength} bytes waiting`);
    client.destroy();
  });
});
