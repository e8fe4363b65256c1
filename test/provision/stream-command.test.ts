// A command fed a stream (tar unpacking an account's files from its old server) succeeds only when
// it exits 0 and its input came whole: tar exits 0 at the end of an archive even when the sender
// fails after it.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { streamCommand } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

describe('a command fed a stream', () => {
  const dir = tempDir('berth-stream-');
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'from'));
  writeFileSync(join(dir, 'from', 'page.html'), 'hello\n');
  const archive = execFileSync('/usr/bin/tar', [
    '--create',
    '--file=-',
    `--directory=${join(dir, 'from')}`,
    '.',
  ]);

  const unpack = (to: string, input: Readable) => {
    mkdirSync(to);
    return streamCommand(['/usr/bin/tar', '--extract', '--file=-', `--directory=${to}`], input).done;
  };

  it('succeeds with a whole archive', async () => {
    await unpack(join(dir, 'whole'), Readable.from([archive]));
    assert.equal(readFileSync(join(dir, 'whole', 'page.html'), 'utf8'), 'hello\n');
  });

  it('fails when its input fails after tar has exited 0', async () => {
    const input = new Readable({ read() {} });
    input.push(archive);
    const done = unpack(join(dir, 'cut'), input);
    // tar has the whole archive and exits 0 before the sender says it failed.
    for (let i = 0; i < 100 && !existsSync(join(dir, 'cut', 'page.html')); i++)
      await new Promise((resolve) => setTimeout(resolve, 20));
    await new Promise((resolve) => setTimeout(resolve, 200));
    input.destroy(new Error('the sender could not read every file'));
    await assert.rejects(done, /its input failed: the sender could not read every file/);
  });

  it('succeeds when the command stops reading before its input ends whole', async () => {
    const input = new Readable({ read() {} });
    input.push(Buffer.alloc(1 << 20));
    setTimeout(() => input.push(null), 200);
    await streamCommand(['/usr/bin/head', '--bytes=1'], input).done;
  });

  it('drains input that still arrives after the command has exited, and ends', {
    timeout: 20_000,
  }, async () => {
    // A write to the closed pipe after the command ended pauses the input with its end unread, if
    // the input is still piped then: a race, so tried many times.
    const trickle = () => {
      const input = new Readable({ read() {} });
      let sent = 0;
      const sending = setInterval(() => {
        input.push(Buffer.alloc(16 * 1024));
        if (++sent === 40) {
          clearInterval(sending);
          input.push(null);
        }
      }, 1);
      return input;
    };
    for (let i = 0; i < 100; i++) await streamCommand(['/usr/bin/head', '--bytes=100'], trickle()).done;
  });
});
