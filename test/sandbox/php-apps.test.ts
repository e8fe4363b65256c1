// What a well-known PHP application (WordPress, Drupal, Laravel) asks of a site, in `berth
// sandbox`: the extensions it loads, addresses that are no file answered by its index.php, and
// uploads of tens of megabytes reaching PHP.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { curl, type RunningSandbox, sandboxWithAccounts } from '../process.ts';

describe("a PHP application's needs on an account's site", () => {
  const dataDir = tempDir('berth-php-apps-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const site = (path: string, args: string[] = []) =>
    curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      ...args,
      `https://alice.example:${sandbox.https_port}${path}`,
    ]);
  const write = async (name: string, content: string) => {
    const file = join(dataDir, 'upload-source');
    writeFileSync(file, content);
    const copied = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/usr/bin/cp',
      file,
      `/home/alice/public_html/${name}`,
    ]);
    assert.equal(copied.code, 0, copied.stderr);
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice']);
    sandbox = running.info;
    // The file the sandbox copies must be readable by alice inside it.
    const opened = await running.exec(['/usr/bin/chmod', '0755', dataDir]);
    assert.equal(opened.code, 0, opened.stderr);
  });
  after(() => running?.stop());

  it('loads the extensions common applications need', async () => {
    await write(
      'extensions.php',
      '<?php echo json_encode(array_map("extension_loaded", ["mysqli", "pdo_mysql", "gd", "xml", "mbstring", "curl", "zip", "intl"]));',
    );
    const reply = site('/extensions.php');
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.body, '[true,true,true,true,true,true,true,true]');
  });

  it("answers an address that is no file with the site's index.php, and 404 without one", async () => {
    await write('index.php', '<?php echo "front controller: ", $_SERVER["REQUEST_URI"];');
    await write('style.css', 'body {}');
    const pretty = site('/2026/11/hello-world/?p=1');
    assert.equal(pretty.status, 200, pretty.body);
    assert.equal(pretty.body, 'front controller: /2026/11/hello-world/?p=1');
    // A file that exists is still served as itself.
    assert.equal(site('/style.css').body, 'body {}');
    // A script that does not exist is never handed to another.
    assert.equal(site('/missing.php').status, 404);

    const removed = await running.exec(['/usr/bin/rm', '/home/alice/public_html/index.php']);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(site('/2026/11/hello-world/').status, 404);
  });

  it('takes an upload of 20 MB into PHP', async () => {
    await write('upload.php', '<?php echo $_FILES["file"]["error"], " ", $_FILES["file"]["size"];');
    const file = join(dataDir, 'photo.jpg');
    writeFileSync(file, Buffer.alloc(20 * 1024 * 1024, 7));
    const reply = site('/upload.php', ['-F', `file=@${file}`]);
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.body, `0 ${20 * 1024 * 1024}`);
  });
});
