// The soak's short variant: twenty seconds of mixed load, checked like the ten-minute run.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './helpers.ts';

describe('the soak', () => {
  const dir = tempDir('berth-soak-test-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('holds for twenty seconds: no 5xx, every 200 in the store, memory and descriptors steady', {
    timeout: 120_000,
  }, async () => {
    const out = join(dir, 'reliability.md');
    copyFileSync(new URL('../docs/reliability.md', import.meta.url), out);
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['bench/soak.ts', '--seconds', '20', '--out', out],
      {
        timeout: 100_000,
      },
    );
    assert.match(stdout, /Verdict: held/);
    const report = readFileSync(out, 'utf8');
    assert.match(report, /\| createacct \| \d+ \| \d+ \| 0 \|/);
    assert.match(report, /of which 0 did not match/);
  });
});
