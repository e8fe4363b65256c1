// System files the driver writes keep their modes whatever the process's umask: under a service
// unit's UMask=0077, a zone written 0600 would be unreadable to BIND, a challenge file to nginx.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  appendToFile,
  makeServiceDirectory,
  removeDirectory,
  writeFileAtomic,
} from '../../src/provision/linux/files.ts';
import { execRunner } from '../../src/provision/linux/run.ts';
import { tempDir } from '../helpers.ts';

describe('writeFileAtomic', () => {
  it('gives the file its mode and the directories it makes 0755, under umask 0077', () => {
    const root = tempDir('berth-files-');
    const before = process.umask(0o077);
    try {
      writeFileAtomic(join(root, 'zones/new/example.com.db'), 'zone\n', 0o644);
      writeFileAtomic(join(root, 'zones/new/example.com.private'), 'key\n', 0o600);
    } finally {
      process.umask(before);
    }
    const mode = (path: string) => statSync(join(root, path)).mode & 0o777;
    assert.equal(mode('zones'), 0o755);
    assert.equal(mode('zones/new'), 0o755);
    assert.equal(mode('zones/new/example.com.db'), 0o644);
    assert.equal(mode('zones/new/example.com.private'), 0o600);
  });
});

describe('writeFileAtomic cut short', () => {
  it('leaves the old file whole and nothing beside it when it cannot write every byte', () => {
    const root = tempDir('berth-files-');
    const zone = join(root, 'example.com.db');
    writeFileSync(zone, 'old\n');
    const script = [
      `import { writeFileAtomic } from ${JSON.stringify(new URL('../../src/provision/linux/files.ts', import.meta.url).href)};`,
      'try {',
      `  writeFileAtomic(${JSON.stringify(zone)}, 'x'.repeat(4096), 0o644);`,
      "  console.log('written');",
      '} catch (error) {',
      "  console.log('refused:', error.code);",
      '}',
    ].join('\n');
    // A shell whose files may not pass 1 KB.
    const said = execFileSync(
      '/bin/sh',
      ['-c', 'ulimit -f 1; exec "$0" --input-type=module -e "$1"', process.execPath, script],
      { encoding: 'utf8' },
    );
    assert.equal(said.trim(), 'refused: EFBIG');
    assert.equal(readFileSync(zone, 'utf8'), 'old\n');
    assert.deepEqual(readdirSync(root), ['example.com.db']);
    rmSync(root, { recursive: true, force: true });
  });
});

describe('appendToFile', () => {
  it('adds to the file it was told of, and to no other: not one of another size, not through a link', () => {
    const dir = tempDir('berth-append-');
    try {
      const file = join(dir, 'table');
      writeFileSync(file, 'a 1\n');
      appendToFile(file, 'b 2\n', 4);
      assert.equal(readFileSync(file, 'utf8'), 'a 1\nb 2\n');
      // Changed since it was read (another writer): nothing is added.
      assert.throws(() => appendToFile(file, 'c 3\n', 4), /changed while it was being written/);
      assert.equal(readFileSync(file, 'utf8'), 'a 1\nb 2\n');
      // A link in the file's place is never followed: what it points at stays as it was.
      const target = join(dir, 'target');
      writeFileSync(target, 'x\n');
      symlinkSync(target, join(dir, 'link'));
      assert.throws(() => appendToFile(join(dir, 'link'), 'c 3\n', 2), { code: 'ELOOP' });
      assert.equal(readFileSync(target, 'utf8'), 'x\n');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the command runner', () => {
  it("gives a command the umask asked for, whatever Berth's own", async () => {
    const root = tempDir('berth-umask-');
    const before = process.umask(0o077);
    try {
      await execRunner().run(['/usr/bin/mkdir', '--', join(root, 'shared')], { umask: 0o022 });
      await execRunner().run(['/usr/bin/mkdir', '--', join(root, 'private')]);
      assert.equal(process.umask(), 0o077, "Berth's own umask is back");
    } finally {
      process.umask(before);
    }
    assert.equal(statSync(join(root, 'shared')).mode & 0o777, 0o755);
    assert.equal(statSync(join(root, 'private')).mode & 0o777, 0o700);
  });
});

describe('removeDirectory', () => {
  it('takes what a write cut short left behind, but never another file', () => {
    const root = tempDir('berth-rmdir-');
    const dir = join(root, 'example.com');
    writeFileAtomic(join(dir, 'certificate.pem'), 'pem\n', 0o600);
    rmSync(join(dir, 'certificate.pem'));
    writeFileSync(join(dir, '.0123456789ab.tmp'), 'half a write');
    removeDirectory(dir);
    assert.equal(existsSync(dir), false);
    writeFileAtomic(join(dir, 'notes.txt'), 'kept\n', 0o644);
    assert.throws(() => removeDirectory(dir), /ENOTEMPTY/);
    assert.equal(existsSync(join(dir, 'notes.txt')), true);
  });
});

describe('makeServiceDirectory', () => {
  it("refuses a link a service's user put in the directory's place, and changes nothing it points at", () => {
    const dir = tempDir();
    const target = join(dir, 'target');
    mkdirSync(target);
    chmodSync(target, 0o755);
    symlinkSync(target, join(dir, 'temp'));
    assert.throws(() => makeServiceDirectory(join(dir, 'temp'), 0, 0, 0o700), /is not a directory/);
    assert.equal(statSync(target).mode & 0o7777, 0o755);
    makeServiceDirectory(join(dir, 'made'), 0, 0, 0o700);
    assert.equal(statSync(join(dir, 'made')).mode & 0o7777, 0o700);
  });
});
