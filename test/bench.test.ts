// The benchmark runner never runs in npm test (too slow, too noisy), but a smoke run of it does, so
// that it cannot rot: every scenario must run and be reported.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { tempDir } from './helpers.ts';

describe('the benchmark runner', () => {
  const dir = tempDir('berth-bench-smoke-');
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('runs every scenario against its baseline and writes the report with its chart', {
    timeout: 690_000,
  }, async () => {
    const out = join(dir, 'benchmarks.md');
    await promisify(execFile)(process.execPath, ['bench/run.ts', '--smoke', '--out', out], {
      // Two sandboxes among them (the whole stack): up to ten minutes on a busy machine.
      timeout: 660_000,
    });
    const report = readFileSync(out, 'utf8');
    for (const scenario of [
      '1. test_connection',
      '2a. listaccts',
      '2b. another call',
      '3a. createacct',
      '3b. test_connection while',
      '4. failed-login storm',
      '5a. resident memory',
      '5b. start-up',
      '6d. createacct, whole stack, one at a time',
      '7a‴. the same right after it',
      '7c. suspendacct, whole stack',
      '9. certificates still to order',
      '9′. DKIM keys made ahead',
    ]) {
      assert.ok(report.includes(`| ${scenario}`), scenario);
    }
    assert.match(report, /Machine: \d+ × /);
    assert.match(readFileSync(join(dir, 'benchmarks.svg'), 'utf8'), /^<svg /);
  });
});
