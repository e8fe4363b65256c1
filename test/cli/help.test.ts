import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { commands, main } from '../../src/cli/main.ts';
import { berth } from '../process.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** Runs `berth ARGS` in this process, for what only writes to stdout. */
async function inProcess(args: string[]): Promise<{ code: number; stdout: string }> {
  let stdout = '';
  const code = await main(args, { stdin: async () => '', out: (text) => (stdout += text) });
  return { code, stdout };
}

// A data directory that must stay absent: --help and --version open no store.
const untouched = join(tmpdir(), `berth-help-${process.pid}`);

describe('berth --help, <command> --help and --version', () => {
  it('every command has a unique name, a summary, and usage forms that begin with its name', () => {
    assert.equal(new Set(commands.map((c) => c.name)).size, commands.length);
    for (const command of commands) {
      assert.match(command.summary, /^[a-z].*[^.]$/, command.name);
      assert.ok(command.usage.length > 0, command.name);
      for (const form of command.usage) assert.ok(form.startsWith(command.name), form);
      for (const [name, option] of Object.entries(command.options))
        assert.ok(option.help, `${command.name} --${name}`);
    }
  });

  it('berth --help lists every command but the ones Berth starts itself, each with its summary', async () => {
    const result = await berth(['--help', '--data-dir', untouched]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^usage: berth <command>/);
    const listed = [...result.stdout.matchAll(/^ {2}([a-z-]+) +(.+)$/gm)].map((m) => [m[1], m[2]]);
    assert.deepEqual(
      listed,
      commands.filter((c) => !c.hidden).map((c) => [c.name, c.summary]),
    );
    assert.equal((await berth(['help'])).stdout, result.stdout);
  });

  it('<command> --help prints its usage and options on stdout, exits 0 and does nothing else', async () => {
    const runs = commands.map(async (command) => ({
      command,
      result: await berth([command.name, '--help', '--data-dir', untouched]),
    }));
    for (const { command, result } of await Promise.all(runs)) {
      const name = command.name;
      assert.equal(result.code, 0, `${name} --help: ${result.stderr}`);
      assert.equal(result.stderr, '', name);
      assert.ok(result.stdout.startsWith(`usage: berth ${name}`), `${name} --help:\n${result.stdout}`);
      assert.match(result.stdout, /^ {2}-h, --help +/m, name);
      for (const option of Object.keys(command.options))
        assert.match(result.stdout, new RegExp(`^ {2}--${option}\\b`, 'm'), `${name} --${option}`);
      // -h and berth help COMMAND say the same.
      for (const args of [
        [name, '-h'],
        ['help', name],
      ]) {
        const printed = await inProcess(args);
        assert.deepEqual(printed, { code: 0, stdout: result.stdout }, args.join(' '));
      }
    }
    assert.equal(existsSync(untouched), false, '--help created the data directory');
  });

  it('docs/cli.md has a row for every command berth --help lists', () => {
    const docs = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8');
    for (const command of commands.filter((c) => !c.hidden))
      assert.match(docs, new RegExp(`^\\| \`berth ${command.name}[ \`]`, 'm'), command.name);
  });

  it("berth --version and berth version print package.json's version", async () => {
    for (const args of [['--version'], ['version'], ['--version', '--data-dir', untouched]]) {
      const result = await berth(args);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `berth ${version}\n`, args.join(' '));
    }
    assert.equal(existsSync(untouched), false, '--version created the data directory');
  });

  it("an unknown option fails with status 2, naming it, then the command's usage on stderr", async () => {
    const result = await berth(['doctor', '--frobnicate', '--data-dir', untouched]);
    assert.equal(result.code, 2);
    assert.equal(result.stdout, '');
    const [first, ...rest] = result.stderr.split('\n');
    assert.equal(first, 'berth: doctor has no option --frobnicate');
    assert.match(rest.join('\n'), /^usage: berth doctor /);
    // An option of another command is no option of this one.
    const other = await berth(['doctor', '--json', '--data-dir', untouched]);
    assert.equal(other.code, 2);
    assert.match(other.stderr, /^berth: doctor has no option --json\nusage: berth doctor /);
    assert.equal(existsSync(untouched), false);
  });

  it('an unknown command or top-level option fails with status 2, naming it, then the command list', async () => {
    for (const [args, first] of [
      [['frobnicate'], 'berth: unknown command frobnicate'],
      [['--frobnicate'], 'berth: unknown option --frobnicate'],
      [['help', 'frobnicate'], 'berth: unknown command frobnicate'],
    ] as [string[], string][]) {
      const result = await berth([...args, '--data-dir', untouched]);
      assert.equal(result.code, 2, args.join(' '));
      assert.equal(result.stdout, '', args.join(' '));
      const lines = result.stderr.split('\n');
      assert.equal(lines[0], first);
      assert.equal(lines[1], 'usage: berth <command> [options]');
      assert.ok(
        lines.some((line) => line.startsWith('  serve ')),
        args.join(' '),
      );
    }
    assert.equal(existsSync(untouched), false, 'an unknown command created the data directory');
  });
});
