// System files the driver writes keep their modes whatever the process's umask: under a service
// unit's UMask=0077, a zone written 0600 would be unreadable to BIND, a challenge file to nginx.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { writeFileAtomic } from '../../src/provision/linux/files.ts';
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
