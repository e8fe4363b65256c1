// Two sandboxes starting at once never choose the same port: each process notes the ports it
// chose where every sandbox of the machine looks, forgets them when it ends, and takes over a note
// whose process is gone.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FTP_PASSIVE_PORTS, note, type Ports } from '../../src/sandbox/ports.ts';

const NOTED = join(tmpdir(), 'berth-sandbox-ports');
const PORTS = new URL('../../src/sandbox/ports.ts', import.meta.url).pathname;

/** Chooses a sandbox's ports in a process of its own, which ends at a line on its input. */
function chooser() {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { choosePorts } = await import(${JSON.stringify(PORTS)});
       console.log(JSON.stringify(await choosePorts()));
       process.stdin.once('data', () => process.exit(0));`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const chosen = new Promise<number[]>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk;
      if (!out.includes('\n')) return;
      const ports = JSON.parse(out) as Ports;
      resolve(
        Object.entries(ports).flatMap(([name, port]) =>
          name === 'ftpPassive' ? Array.from({ length: FTP_PASSIVE_PORTS }, (_, i) => port + i) : [port],
        ),
      );
    });
    child.once('exit', (code) => reject(new Error(`the chooser ended (${code}) before it chose`)));
  });
  const end = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.stdin.end('\n');
    });
  return { child, chosen, end };
}

describe('sandbox ports', () => {
  it('are never chosen twice by sandboxes starting at once, and their notes go when each ends', async () => {
    const choosers = Array.from({ length: 12 }, chooser);
    let all: number[] = [];
    try {
      const sets = await Promise.all(choosers.map((c) => c.chosen));
      all = sets.flat();
      assert.equal(new Set(all).size, all.length, 'a port chosen twice');
      for (const [i, ports] of sets.entries())
        for (const port of ports)
          assert.equal(readFileSync(join(NOTED, String(port)), 'utf8'), String(choosers[i]!.child.pid));
    } finally {
      await Promise.all(choosers.map((c) => c.end()));
    }
    assert.deepEqual(
      all.filter((port) => existsSync(join(NOTED, String(port)))),
      [],
    );
  });

  it('take over a note whose process is gone, and leave one whose process runs', async () => {
    const gone = chooser();
    const [port] = await gone.chosen;
    await gone.end();
    const file = join(NOTED, String(port));
    mkdirSync(NOTED, { recursive: true, mode: 0o700 });
    try {
      // A sandbox killed leaves its notes: their pid names no process now.
      writeFileSync(file, String(gone.child.pid));
      assert.equal(note(port!), true);
      assert.equal(readFileSync(file, 'utf8'), String(process.pid));
      assert.equal(existsSync(`${file}.${process.pid}`), false, 'nothing left aside');
      writeFileSync(file, String(process.ppid));
      assert.equal(note(port!), false);
      assert.equal(readFileSync(file, 'utf8'), String(process.ppid));
    } finally {
      rmSync(file, { force: true });
    }
  });
});
