// Looking up one user in the user database keeps nothing of the file's text: the mail tables keep
// each account's hash, and a hash that held on to the shadow file it was read from kept a copy of
// that file for every account (4 GB of Berth's heap near 10,000 accounts).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { tempDir } from '../helpers.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("the user database's look-ups", () => {
  it('keep no copy of the file they read a hash from', () => {
    const root = tempDir('berth-passwd-');
    dirs.push(root);
    // 200 look-ups, each in a new 1 MB shadow file, their hashes kept: a few KB, or 200 MB.
    const script = `
      import { mkdirSync, writeFileSync } from 'node:fs';
      import { shadowPassword } from ${JSON.stringify(new URL('../../src/provision/linux/passwd.ts', import.meta.url).href)};
      const root = ${JSON.stringify(root)};
      mkdirSync(root + '/etc', { recursive: true });
      const kept = [];
      gc();
      const before = process.memoryUsage().heapUsed;
      for (let round = 0; round < 200; round++) {
        const lines = [];
        for (let i = 0; i < 10000; i++) lines.push('user' + i + ':$6$' + round + 'salt$' + 'h'.repeat(86) + ':20000:0:99999:7:::');
        writeFileSync(root + '/etc/shadow', lines.join('\\n') + '\\n');
        kept.push(shadowPassword(root, 'user' + (round * 37) % 10000));
      }
      gc();
      console.log(Math.round((process.memoryUsage().heapUsed - before) / 1e6), kept.length);
    `;
    const said = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    const [grown, kept] = said.trim().split(' ').map(Number);
    assert.equal(kept, 200);
    assert.ok(grown! < 20, `the heap grew by ${grown} MB keeping 200 hashes`);
  });
});
