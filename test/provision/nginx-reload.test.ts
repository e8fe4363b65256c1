// An nginx reload is its master's own parse: no `nginx -t` first when the master and its error log
// are known, a refusal read from the `[emerg]` line the master writes there, and `nginx -t` before
// every reload when the error log is not known. A stand-in master plays nginx's part, in a system
// root: on SIGHUP it either starts a new worker and ends the old one, or logs why it refuses.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sha512Crypt } from '../../src/auth/sha512-crypt.js';
import { loadConfig } from '../../src/config/index.ts';
import { linuxContext } from '../../src/provision/linux/context.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { webComponent } from '../../src/provision/linux/web/component.ts';
import { tempDir } from '../helpers.ts';
import { makeSystemRoot } from './system-root.ts';

const MASTER = `
const { spawn } = require('node:child_process');
const { appendFileSync, readFileSync } = require('node:fs');
const [errorLog, mode] = process.argv.slice(1);
const worker = () => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
let current = worker();
process.on('SIGHUP', () => {
  if (readFileSync(mode, 'utf8') === 'refuse') {
    appendFileSync(errorLog, '2026/11/22 10:00:00 [notice] 1#1: a line of another process\\n');
    appendFileSync(errorLog, \`2026/11/22 10:00:00 [emerg] \${process.pid}#\${process.pid}: unknown directive "bogus" in /etc/nginx/sites-enabled/x.conf:1\\n\`);
    return;
  }
  const old = current;
  current = worker();
  setTimeout(() => old.kill(), 100);
});
process.on('SIGTERM', () => { current.kill(); process.exit(0); });
setInterval(() => {}, 1000);
process.send('listening');
`;

describe('an nginx reload', { timeout: 30_000 }, () => {
  const masters: ChildProcess[] = [];
  after(() => {
    for (const master of masters) master.kill('SIGTERM');
  });

  async function stage(errorLog: string) {
    const root = makeSystemRoot();
    const mode = join(root, 'mode');
    writeFileSync(mode, 'take');
    const master = spawn(process.execPath, ['-e', MASTER, join(root, 'var/log/nginx/error.log'), mode], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    masters.push(master);
    await new Promise((resolve) => master.once('message', resolve));
    writeFileSync(join(root, 'run/nginx.pid'), `${master.pid}\n`);
    // The same master refused an earlier reload: that line is not this reload's answer.
    writeFileSync(
      join(root, 'var/log/nginx/error.log'),
      `2026/11/22 09:00:00 [emerg] ${master.pid}#${master.pid}: an earlier refusal\n`,
    );
    const tested = join(root, 'tested');
    const config = loadConfig({
      dataDir: tempDir(),
      linux: {
        systemRoot: root,
        nginxErrorLog: errorLog,
        testWeb: ['/usr/bin/touch', tested],
        reloadWeb: ['/usr/bin/kill', '-HUP', String(master.pid)],
      },
    });
    const web = webComponent(
      linuxContext(config, execRunner(), async (p) => sha512Crypt(p)),
      null,
      false,
    );
    return { reload: () => web.services![0]!.reload(), refuse: () => writeFileSync(mode, 'refuse'), tested };
  }

  it('is taken without nginx -t first: the master parses the files once', async () => {
    const nginx = await stage('/var/log/nginx/error.log');
    await nginx.reload();
    await nginx.reload();
    assert.equal(existsSync(nginx.tested), false, 'nginx -t ran');
  });

  it('fails with the reason the master logs when it refuses the files, at once', async () => {
    const nginx = await stage('/var/log/nginx/error.log');
    nginx.refuse();
    const started = Date.now();
    await assert.rejects(nginx.reload(), {
      message:
        'nginx refused the new configuration: unknown directive "bogus" in /etc/nginx/sites-enabled/x.conf:1',
    });
    assert.ok(Date.now() - started < 2_000, `failed after ${Date.now() - started} ms, not on the line`);
    assert.equal(existsSync(nginx.tested), false, 'nginx -t ran');
  });

  it('runs nginx -t before every reload when the error log is not known', async () => {
    const nginx = await stage('');
    await nginx.reload();
    assert.equal(existsSync(nginx.tested), true, 'nginx -t did not run');
  });
});
