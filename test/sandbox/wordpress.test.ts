// A well-known PHP application end to end on an account of `berth sandbox`, as a customer sets it
// up: WordPress (Debian's copy, put in public_html as an upload would) on a database and user made
// through the customer API, installed through its own web installer over HTTPS, then logged into,
// its posts served at pretty addresses and its media uploaded. The account next door cannot reach
// the database.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import { curl, type RunningSandbox, sandboxHolderCall, sandboxWithAccounts } from '../process.ts';

const ALICE = { user: 'alice', password: 'Alice-pass-1234' };
const DATABASE_PASSWORD = 'Wp-database-pass-5678';
const ADMIN_PASSWORD = 'Wp-admin-pass-9012';

describe('WordPress on an account', () => {
  const dataDir = tempDir('berth-wordpress-');
  const cookies = join(dataDir, 'cookies.txt');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;
  let origin = '';

  /** A request to alice's site, with WordPress's cookies kept between requests. */
  const site = (path: string, args: string[] = []) =>
    curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      '-b',
      cookies,
      '-c',
      cookies,
      ...args,
      `${origin}${path}`,
    ]);
  const asAlice = async (script: string) => {
    const done = await running.asUser('alice', script);
    assert.equal(done.code, 0, done.stderr);
    return done.stdout;
  };
  const holder = async (operation: string, params: Record<string, string>) => {
    const reply = await sandboxHolderCall(sandbox, ALICE, operation, params);
    assert.equal(reply.status, 200, `${operation}: ${JSON.stringify(reply.body)}`);
    return reply.body.data as Record<string, unknown>;
  };

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['alice', 'bob']);
    sandbox = running.info;
    origin = `https://alice.example:${sandbox.https_port}`;
    writeFileSync(cookies, '');
  });
  after(() => running?.stop());

  it('installs from its web installer on a database the holder made, and serves its blog', async () => {
    assert.equal((await holder('add_database', { name: 'wp' })).name, 'alice_wp');
    assert.equal(
      (await holder('add_database_user', { name: 'wp', password: DATABASE_PASSWORD })).name,
      'alice_wp',
    );
    await holder('grant_database', { database: 'alice_wp', dbuser: 'alice_wp' });

    // The files, as an upload of WordPress's archive leaves them: the account's own.
    const salts = ['AUTH', 'SECURE_AUTH', 'LOGGED_IN', 'NONCE']
      .flatMap((name) => [`${name}_KEY`, `${name}_SALT`])
      .map((name) => `define('${name}', '${randomBytes(24).toString('hex')}');`)
      .join('\n');
    const config = join(dataDir, 'wp-config.php');
    writeFileSync(
      config,
      `<?php
define('DB_NAME', 'alice_wp');
define('DB_USER', 'alice_wp');
define('DB_PASSWORD', '${DATABASE_PASSWORD}');
define('DB_HOST', 'localhost');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
${salts}
$table_prefix = 'wp_';
define('WP_DEBUG', false);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('FS_METHOD', 'direct');
if (!defined('ABSPATH')) define('ABSPATH', __DIR__ . '/');
require_once ABSPATH . 'wp-settings.php';
`,
      { mode: 0o644 },
    );
    const opened = await running.exec(['/usr/bin/chmod', '0755', dataDir]);
    assert.equal(opened.code, 0, opened.stderr);
    await asAlice(
      `rm -f /home/alice/public_html/index.html && cp -rL /usr/share/wordpress/. /home/alice/public_html/ && rm -f /home/alice/public_html/.htaccess && cp ${config} /home/alice/public_html/wp-config.php`,
    );

    const installer = site('/wp-admin/install.php');
    assert.equal(installer.status, 200, installer.body);
    const installed = site('/wp-admin/install.php?step=2', [
      '--data-urlencode',
      "weblog_title=Alice's Garden",
      '--data-urlencode',
      'user_name=gardener',
      '--data-urlencode',
      `admin_password=${ADMIN_PASSWORD}`,
      '--data-urlencode',
      `admin_password2=${ADMIN_PASSWORD}`,
      '--data-urlencode',
      'admin_email=gardener@alice.example',
      '--data-urlencode',
      'blog_public=0',
      '--data-urlencode',
      'language=',
    ]);
    assert.equal(installed.status, 200, installed.body);
    assert.match(installed.body, /WordPress has been installed/);

    const home = site('/');
    assert.equal(home.status, 200, home.body);
    assert.match(home.body, /<title>Alice(&#039;|&#8217;|')s Garden<\/title>/);
  });

  it('logs its administrator in, and serves posts at pretty addresses', async () => {
    site('/wp-login.php');
    const login = site('/wp-login.php', [
      '--data-urlencode',
      'log=gardener',
      '--data-urlencode',
      `pwd=${ADMIN_PASSWORD}`,
      '--data-urlencode',
      'testcookie=1',
      '--data-urlencode',
      `redirect_to=${origin}/wp-admin/`,
    ]);
    assert.equal(login.status, 302, login.body);
    const dashboard = site('/wp-admin/');
    assert.equal(dashboard.status, 200, dashboard.body);
    assert.match(dashboard.body, /Dashboard/);

    // Pretty permalinks, as the Settings page stores them, then the first post at its address.
    await asAlice(
      `MYSQL_PWD='${DATABASE_PASSWORD}' /usr/bin/mariadb -u alice_wp alice_wp -e "UPDATE wp_options SET option_value='/%postname%/' WHERE option_name='permalink_structure'"`,
    );
    const post = site('/hello-world/');
    assert.equal(post.status, 200, post.body);
    assert.match(post.body, /Hello world!/);
  });

  it('uploads media into the account, served back over HTTPS', async () => {
    const page = site('/wp-admin/media-new.php?browser-uploader');
    assert.equal(page.status, 200, page.body);
    const nonce = /name="_wpnonce" value="([0-9a-f]+)"/.exec(page.body)?.[1];
    assert.ok(nonce, 'the upload form has its nonce');
    const image = join(dataDir, 'flower.gif');
    // A 1×1 GIF.
    writeFileSync(image, Buffer.from('R0lGODlhAQABAIAAAAAAAP///ywAAAAAAQABAAACAUwAOw==', 'base64'));
    const uploaded = site('/wp-admin/media-new.php', [
      '-F',
      `async-upload=@${image};type=image/gif`,
      '-F',
      `_wpnonce=${nonce}`,
      '-F',
      'html-upload=Upload',
      '-F',
      'post_id=0',
    ]);
    assert.ok([200, 302].includes(uploaded.status), uploaded.body);
    const files = await asAlice(
      'find /home/alice/public_html/wp-content/uploads -name "flower*.gif" -user alice',
    );
    const file = files.trim().split('\n')[0]!;
    assert.match(file, /flower\.gif$/, 'the upload is a file of the account');
    const served = site(file.replace('/home/alice/public_html', ''));
    assert.equal(served.status, 200);
  });

  it("is out of reach of the account next door: bob's PHP cannot use alice's database", async () => {
    const probe = join(dataDir, 'probe.php');
    writeFileSync(
      probe,
      `<?php mysqli_report(MYSQLI_REPORT_OFF);
$db = @mysqli_connect('localhost', 'alice_wp', 'guess', 'alice_wp');
echo $db ? 'connected' : 'refused';
$own = @mysqli_connect('localhost', 'bob', 'Bob-pass-1234');
echo $own ? ' bob connected' : ' bob refused';`,
      { mode: 0o644 },
    );
    const copied = await running.asUser('bob', `cp ${probe} /home/bob/public_html/probe.php`);
    assert.equal(copied.code, 0, copied.stderr);
    const reply = curl([
      '--resolve',
      `bob.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://bob.example:${sandbox.https_port}/probe.php`,
    ]);
    assert.equal(reply.status, 200, reply.body);
    assert.equal(reply.body, 'refused bob refused');
  });
});
