// PHP-FPM reloads by re-executing itself on SIGUSR2, and until its new image has set its handlers
// a SIGUSR2 ends it. A reload is never signalled then, and it is waited for until the pools removed
// no longer listen. Here a stand-in master plays PHP-FPM's part, in a system root.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sha512Crypt } from '../../src/auth/sha512-crypt.js';
import { loadConfig } from '../../src/config.ts';
import { linuxContext } from '../../src/provision/linux/context.ts';
import { phpComponent } from '../../src/provision/linux/php/component.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';
import { makeSystemRoot } from './system-root.ts';

// Listens on a removed pool's socket; catches SIGUSR2 only after a while (a re-executed master);
// on SIGUSR2, notes it and stops listening a moment later.
const MASTER = `
const [socket, marker] = process.argv.slice(1);
const server = require('node:net').createServer().listen(socket, () => process.send('listening'));
setTimeout(() => process.on('SIGUSR2', () => {
  require('node:fs').writeFileSync(marker, 'reloaded');
  setTimeout(() => server.close(), 300);
}), 500);
setInterval(() => {}, 1000);
`;

describe('a PHP-FPM reload', () => {
  const masters: ChildProcess[] = [];
  after(() => {
    for (const master of masters) master.kill('SIGKILL');
  });

  it('waits for the master to catch SIGUSR2, then for the removed pools to stop listening', async () => {
    const root = makeSystemRoot();
    const socket = join(root, 'run/php/berth-gone.sock');
    const marker = join(root, 'reloaded');
    const master = spawn(process.execPath, ['-e', MASTER, socket, marker], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    masters.push(master);
    await new Promise((resolve) => master.once('message', resolve));
    writeFileSync(join(root, 'run/php/php8.2-fpm.pid'), `${master.pid}\n`);
    // A socket file no master listens on (one killed outright left it): nothing to wait for.
    writeFileSync(join(root, 'run/php/berth-stale.sock'), '');
    const config = loadConfig({
      dataDir: tempDir(),
      linux: {
        systemRoot: root,
        phpPoolDir: '/etc/php/8.2/fpm/pool.d',
        phpPidFile: '/run/php/php8.2-fpm.pid',
        reloadPhp: ['/usr/bin/kill', '-USR2', String(master.pid)],
      },
    });
    const php = phpComponent(linuxContext(config, execRunner(), async (p) => sha512Crypt(p)));
    await php.services![0]!.reload();
    assert.equal(master.exitCode, null, 'the master died of a SIGUSR2 it could not catch yet');
    assert.equal(master.signalCode, null);
    assert.equal(readFileSync(marker, 'utf8'), 'reloaded');
    assert.equal(existsSync(socket), false, 'the reload answered while a removed pool still listened');
    await sleep(10);
    assert.equal(master.exitCode, null);
  });
});
