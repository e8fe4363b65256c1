// Berth's PHP activator (php/activator.pl, activator.ts) with Debian's PHP-FPM itself: a socket
// held before any master runs, answering a FastCGI request once the master it starts takes the
// socket over; the socket's path kept when the master ends (PHP-FPM removes its own `listen`
// path), watched again, and a new master started for the next request; a released socket gone; a
// request waiting on a master that could not start refused at once; a replaced path held anew.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { type Activator, activator } from '../../src/provision/linux/php/activator.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

const PROGRAM = new URL('../../src/provision/linux/php/activator.pl', import.meta.url).pathname;
const PHP_FPM = ['/usr/sbin/php-fpm8.2', '/usr/sbin/php-fpm'].find((path) => existsSync(path)) ?? '';

/** One FastCGI record (version 1) of `type` for request 1. */
function record(type: number, body: Buffer): Buffer {
  const header = Buffer.from([1, type, 0, 1, body.length >> 8, body.length & 0xff, 0, 0]);
  return Buffer.concat([header, body]);
}

function pairs(params: Record<string, string>): Buffer {
  return Buffer.concat(
    Object.entries(params).map(([name, value]) => {
      assert.ok(name.length < 128 && value.length < 128);
      return Buffer.concat([Buffer.from([name.length, value.length]), Buffer.from(name + value)]);
    }),
  );
}

/** A GET of `script` over FastCGI at `socket`, as nginx sends it: the output, or the error. */
function fastcgi(socket: string, script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = connect(socket);
    const chunks: Buffer[] = [];
    connection.on('connect', () => {
      connection.write(
        Buffer.concat([
          record(1, Buffer.from([0, 1, 0, 0, 0, 0, 0, 0])),
          record(4, pairs({ SCRIPT_FILENAME: script, REQUEST_METHOD: 'GET', SCRIPT_NAME: '/t.php' })),
          record(4, Buffer.alloc(0)),
          record(5, Buffer.alloc(0)),
        ]),
      );
    });
    connection.on('data', (chunk) => chunks.push(chunk));
    connection.on('error', reject);
    connection.on('close', () => {
      const data = Buffer.concat(chunks);
      let out = '';
      for (let at = 0; at + 8 <= data.length; ) {
        const type = data[at + 1]!;
        const length = (data[at + 4]! << 8) | data[at + 5]!;
        if (type === 6) out += data.subarray(at + 8, at + 8 + length).toString();
        at += 8 + length + data[at + 6]!;
      }
      if (data.length === 0) reject(new Error('closed without an answer'));
      else resolve(out);
    });
  });
}

async function until(what: string, ready: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 500; i++) {
    if (await ready()) return;
    await sleep(20);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const alive = (pid: number) => existsSync(`/proc/${pid}`);

describe("Berth's PHP activator, with PHP-FPM itself", { skip: PHP_FPM === '' && 'no php-fpm' }, () => {
  const dir = tempDir('berth-activator-');
  const site = join(dir, 'site');
  const sockets = join(dir, 'sockets');
  const control = join(dir, 'activator');
  const web = findSystemUser('/', 'www-data')!;
  const runner = execRunner();
  const clients: Activator[] = [];
  const client = () => {
    const made = activator(control, runner);
    clients.push(made);
    return made;
  };
  const ready: string[] = [];
  const exited: number[] = [];
  let master: number | null = null;

  chmodSync(dir, 0o755);
  mkdirSync(site, { mode: 0o755 });
  mkdirSync(sockets, { mode: 0o755 });
  writeFileSync(join(site, 't.php'), '<?php echo "served by ", getmypid();', { mode: 0o644 });
  const pool = (name: string, listen: string) => {
    const file = join(dir, `${name}.conf`);
    writeFileSync(
      file,
      [
        '[global]',
        `pid = ${join(dir, `${name}.pid`)}`,
        `error_log = ${join(dir, `${name}.log`)}`,
        'daemonize = no',
        `[${name}]`,
        'user = nobody',
        'group = nogroup',
        `listen = ${listen}`,
        'pm = ondemand',
        'pm.max_children = 2',
        '',
      ].join('\n'),
    );
    return file;
  };
  const path = join(sockets, 'alice.sock');
  const listenKey = join(dir, 'inherited', 'alice.sock');
  const fpm = (name: string) => [PHP_FPM, '--nodaemonize', '--fpm-config', pool(name, listenKey)];
  const events = {
    ready: (key: string) => ready.push(key),
    exited: (_key: string, pid: number) => exited.push(pid),
  };

  after(() => {
    for (const made of clients) made.close();
    if (master !== null && alive(master)) process.kill(-master, 'SIGKILL');
    // The activator itself: the one process whose command names this test's control socket.
    const held = join(control, 'control.sock');
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        if (cmdline.includes(held)) process.kill(Number(entry), 'SIGKILL');
      } catch {}
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('holds the socket, the web server’s alone, and tells of a request waiting on it', async () => {
    const berth = client();
    await berth.hold('alice', path, web.uid, web.gid);
    const stat = lstatSync(path);
    assert.ok(stat.isSocket());
    assert.deepEqual([stat.uid, stat.gid, stat.mode & 0o777], [web.uid, web.gid, 0o600]);
    // Held again with the same path: the same socket.
    await berth.hold('alice', path, web.uid, web.gid);
    assert.equal(lstatSync(path).ino, stat.ino);
    // A request before anyone listens is told when Berth listens.
    const answer = fastcgi(path, join(site, 't.php'));
    await sleep(100);
    await berth.listen(events);
    await until('the request to be told', () => ready.includes('alice'));
    assert.equal((await berth.list()).alice?.waiting, true);

    // The master takes the socket over and answers the request that waited.
    master = await berth.exec('alice', fpm('alice'), { PATH: '/usr/sbin:/usr/bin' }, listenKey);
    assert.match(await answer, /served by \d+/);
    assert.equal((await berth.list()).alice?.pid, master);
    assert.equal(ready.length, 1, 'told once');
  });

  it('keeps the path when the master ends, and tells of the next request', async () => {
    const berth = clients[0]!;
    assert.ok(master !== null);
    const ended = master;
    process.kill(ended, 'SIGQUIT');
    await until('the master to end', () => exited.includes(ended));
    assert.ok(lstatSync(path).isSocket(), 'the socket is still there');
    assert.equal((await berth.list()).alice?.pid, null);
    const answer = fastcgi(path, join(site, 't.php'));
    await until('the next request to be told', () => ready.length === 2);
    master = await berth.exec('alice', fpm('alice'), { PATH: '/usr/sbin:/usr/bin' }, listenKey);
    assert.match(await answer, /served by \d+/);
    // While the master runs, requests are its own: the activator says nothing.
    assert.match(await fastcgi(path, join(site, 't.php')), /served by/);
    assert.equal(ready.length, 2);
  });

  it('refuses what waits for a master that could not start, and watches the socket again', async () => {
    const berth = clients[0]!;
    const running = master!;
    // The master and its workers (Berth ends the account's control group): the activator started
    // it in a session of its own.
    process.kill(-running, 'SIGKILL');
    await until('the master to end', () => exited.includes(running));
    master = null;
    const waiting = fastcgi(path, join(site, 't.php')).then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await until('the request to be told', () => ready.length === 3);
    await berth.drain('alice');
    // Accepted and closed unread: nginx answers 502 at once.
    assert.match(await waiting, /ECONNRESET|closed without an answer/);
    // Watched again: the next request is told.
    const next = fastcgi(path, join(site, 't.php')).catch(() => '');
    await until('the next request to be told', () => ready.length === 4);
    await berth.drain('alice');
    await next;
  });

  it('binds a path someone removed anew, and ends the master that served the old socket', async () => {
    const berth = clients[0]!;
    // Drained above, so watched: a master is started for a request.
    const answer = fastcgi(path, join(site, 't.php'));
    await until('the request to be told', () => ready.length === 5);
    master = await berth.exec('alice', fpm('alice'), { PATH: '/usr/sbin:/usr/bin' }, listenKey);
    assert.match(await answer, /served by/);
    rmSync(path);
    assert.equal((await berth.list()).alice?.present, false);
    await berth.hold('alice', path, web.uid, web.gid);
    assert.equal((await berth.list()).alice?.present, true);
    const old = master;
    await until('the old master to end', () => !alive(old));
    const again = fastcgi(path, join(site, 't.php'));
    await until('the request on the new socket to be told', () => ready.length === 6);
    master = await berth.exec('alice', fpm('alice'), { PATH: '/usr/sbin:/usr/bin' }, listenKey);
    assert.match(await again, /served by/);
  });

  it('ends its own master on stop, and lists a request no one started among those waiting', async () => {
    const berth = clients[0]!;
    const running = master!;
    await berth.stop('alice');
    await until('the master to end', () => exited.includes(running));
    const told = ready.length;
    const waiting = fastcgi(path, join(site, 't.php')).then(
      () => 'answered',
      (error: Error) => error.message,
    );
    await until('the request to be told', () => ready.length === told + 1);
    // Told once; a Berth that lost the telling finds it in the check.
    assert.deepEqual((await berth.check()).waiting, ['alice']);
    master = await berth.exec('alice', fpm('alice'), { PATH: '/usr/sbin:/usr/bin' }, listenKey);
    assert.equal(await waiting, 'answered');
    assert.deepEqual((await berth.check()).waiting, []);
  });

  it('refuses a second activator on the same control socket', () => {
    const second = spawnSync('/usr/bin/perl', [PROGRAM, join(control, 'control.sock')], { encoding: 'utf8' });
    assert.notEqual(second.status, 0);
    assert.match(second.stderr, /another activator runs/);
  });

  it('refuses a master for a socket it does not hold, and removes a released socket’s path', async () => {
    const berth = clients[0]!;
    await assert.rejects(
      berth.exec('bob', fpm('bob'), {}, join(dir, 'inherited', 'bob.sock')),
      /no socket is held for bob/,
    );
    await berth.release('alice');
    assert.equal(existsSync(path), false);
    assert.deepEqual(await berth.list(), {});
    // The running master keeps its own descriptor until it ends; no one reaches it by the path.
    await assert.rejects(fastcgi(path, join(site, 't.php')));
  });

  it('is found again by the next Berth, with the masters it started', async () => {
    const first = clients[0]!;
    await first.hold('carol', join(sockets, 'carol.sock'), web.uid, web.gid);
    first.close();
    const next = client();
    const held = await next.list();
    assert.deepEqual(Object.keys(held), ['carol']);
    assert.equal(held.carol?.path, join(sockets, 'carol.sock'));
  });
});
