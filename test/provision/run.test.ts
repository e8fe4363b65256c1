// The one way Berth runs a system command (src/provision/linux/run.ts), through its spawner
// (spawner.pl): argv without a shell, the input given on standard input, the command's own umask
// and environment, a failure named with the end of what it wrote to standard error, a time limit;
// many at once; output streamed as it comes; a spawner that ends fails what it was running and is
// started again; an idle spawner keeps no process from ending.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The path of a file holding `text`, removed when the tests end. */
function written(text: string): string {
  const dir = tempDir();
  dirs.push(dir);
  const file = join(dir, 'text');
  writeFileSync(file, text);
  return file;
}

describe('system commands through the spawner', () => {
  const runner = execRunner();

  it('runs argv as given, never through a shell, with its input, umask and environment', async () => {
    assert.deepEqual(await runner.run(['/bin/echo', '$(id)', '; true']), {
      stdout: '$(id) ; true\n',
      stderr: '',
    });
    assert.equal((await runner.run(['/bin/cat'], { input: 'Secret-pass-1234' })).stdout, 'Secret-pass-1234');
    assert.equal((await runner.run(['/bin/sh', '-c', 'umask'], { umask: 0o027 })).stdout, '0027\n');
    // The environment's order is no part of it.
    const env = (await runner.run(['/usr/bin/env'], { env: { BERTH_TEST: 'yes' } })).stdout;
    assert.deepEqual(env.trimEnd().split('\n').sort(), [
      'BERTH_TEST=yes',
      'LANG=C',
      'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
    ]);
    assert.throws(() => runner.run(['echo', 'relative']), /not an absolute command path/);
    // exec(2) would end an argument at a NUL byte and run the command with less than it was given.
    assert.throws(() => runner.run(['/bin/echo', 'a\0b']), /NUL byte/);
    assert.throws(() => runner.run(['/bin/echo'], { env: { X: 'a\0b' } }), /NUL byte/);
    assert.throws(() => runner.start!(['/bin/sleep\0', '1'], {}), /NUL byte/);
  });

  it('names a failure with the end of what the command wrote to standard error, and ends one past its time', async () => {
    await assert.rejects(runner.run(['/bin/sh', '-c', 'echo one >&2; echo two >&2; exit 3']), {
      message: '/bin/sh failed: one / two',
    });
    await assert.rejects(
      runner.run(['/nonexistent/tool']),
      /\/nonexistent\/tool failed: spawn \/nonexistent\/tool ENOENT/,
    );
    await assert.rejects(
      runner.run(['/bin/sleep', '10'], { timeoutMs: 100 }),
      /\/bin\/sleep failed: Command failed/,
    );
  });

  it('passes arguments, variables and input whole, spaces and line breaks included, and bounds the output', async () => {
    // Requests and answers are lines of fields apart by spaces: neither may cut one short.
    assert.equal((await runner.run(['/usr/bin/printf', '%s|', 'a b', 'c\nd', ''])).stdout, 'a b|c\nd||');
    const env = (await runner.run(['/usr/bin/env'], { env: { BERTH_TEST: 'one two\nthree' } })).stdout;
    assert.ok(env.includes('BERTH_TEST=one two\nthree\n'), env);
    const text = `${'é ✓ x\n'.repeat(200_000)}\n`;
    assert.equal((await runner.run(['/bin/cat'], { input: text })).stdout, text);
    // A command that reads none of its input is no failure.
    assert.deepEqual(await runner.run(['/bin/true'], { input: text }), { stdout: '', stderr: '' });
    await assert.rejects(runner.run(['/usr/bin/head', '-c', '5000000', '/dev/zero']), /maxBuffer/);
  });

  it('runs many at once, each answered with its own output', async () => {
    const outputs = await Promise.all(
      Array.from({ length: 100 }, (_, i) => runner.run(['/bin/echo', String(i)])),
    );
    assert.deepEqual(
      outputs.map((o) => o.stdout),
      Array.from({ length: 100 }, (_, i) => `${i}\n`),
    );
  });

  it('fails what a spawner that ends was running, and starts another for the next command', async () => {
    const running = runner.run(['/bin/sleep', '30']);
    const spawner = execFileSync('/usr/bin/pgrep', ['-P', String(process.pid), '-f', 'spawner.pl'])
      .toString()
      .trim();
    process.kill(Number(spawner), 'SIGKILL');
    await assert.rejects(running, /spawner ended/);
    assert.equal((await runner.run(['/bin/echo', 'again'])).stdout, 'again\n');
  });

  it('starts a detached process in a session of its own, and tells when it has ended', async () => {
    const started = await runner.start!(['/bin/sleep', '0.3'], { PATH: '/usr/bin:/bin' });
    const stat = readFileSync(`/proc/${started.pid}/stat`, 'utf8');
    // Its own session (field 6 is the session id): it leads it.
    assert.equal(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3], String(started.pid));
    assert.equal(started.exited(), false);
    for (let i = 0; i < 100 && !started.exited(); i++) await sleep(20);
    assert.equal(started.exited(), true);
    await assert.rejects(
      runner.start!(['/nonexistent/daemon'], {}),
      /\/nonexistent\/daemon did not start: spawn \/nonexistent\/daemon ENOENT/,
    );
  });

  it("streams a command's output as it comes, unbounded, its bytes whole", async () => {
    // The first piece is read while the command still runs.
    const slow = runner.stream(['/bin/sh', '-c', 'echo first; exec /bin/sleep 30'], { timeoutMs: 1_500 });
    const [first] = (await once(slow.output, 'data')) as [Buffer];
    assert.equal(first.toString(), 'first\n');
    // Past what `run` would hold, with characters cut between pieces.
    const text = 'é ✓ x\n'.repeat(1_000_000);
    const big = runner.stream(['/bin/cat', written(text)]);
    assert.equal(Buffer.concat(await big.output.toArray()).toString(), text);
    await big.done;
    const failed = runner.stream(['/bin/sh', '-c', 'echo part; echo why >&2; exit 4']);
    assert.equal(Buffer.concat(await failed.output.toArray()).toString(), 'part\n');
    await assert.rejects(failed.done, { message: '/bin/sh failed: why', exitCode: 4 });
    assert.throws(() => runner.stream(['cat']), /not an absolute command path/);
    await assert.rejects(slow.done, /\/bin\/sh failed: Command failed: timed out/);
  });

  it('keeps no process from ending while it is idle', () => {
    const script = `import { execRunner } from ${JSON.stringify(new URL('../../src/provision/linux/run.ts', import.meta.url).href)};
const out = await execRunner().run(['/bin/echo', 'ran']);
process.stdout.write(out.stdout);`;
    const started = Date.now();
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 20_000,
    }).toString();
    assert.equal(output, 'ran\n');
    assert.ok(Date.now() - started < 15_000);
  });
});
