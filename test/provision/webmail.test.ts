// The webmail component of the linux driver, in a throwaway system root: Roundcube's configuration
// root's and readable by webmail's own group alone, its DES key made once and kept, its database's
// directory webmail's user's alone, its PHP-FPM pool running as that user behind a socket only the
// web server may use, its nginx server block on webmail_port with the server's certificate (which
// nginx accepts), and berth doctor finding each of these changed.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { inspect } from '../../src/operations/maintenance.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { forSuite } from '../helpers.ts';
import { linuxSetup, nginxAccepts } from './system-root.ts';

describe('webmail on the linux driver', () => {
  const h = forSuite(linuxSetup);
  const file = (path: string) => join(h.root, path);
  const read = (path: string) => readFileSync(file(path), 'utf8');
  const owner = (path: string) => {
    const found = statSync(file(path));
    return [found.uid, found.gid, found.mode & 0o7777];
  };
  const webmail = () => findSystemUser(h.root, 'berth-webmail')!;

  it('makes a system user of its own: no account’s, no home, no shell', () => {
    const user = webmail();
    assert.ok(user, 'berth-webmail in the root’s /etc/passwd');
    assert.ok(user.uid < 1000 && user.uid > 0, `a system uid, not root: ${user.uid}`);
    assert.match(
      read('etc/passwd'),
      /^berth-webmail:x:\d+:\d+:Roundcube webmail:\/nonexistent:\/usr\/sbin\/nologin$/m,
    );
  });

  it("writes Roundcube's configuration root's, readable by webmail's group alone, with a DES key made once", async () => {
    const { uid, gid } = webmail();
    assert.deepEqual(owner('etc/berth/webmail'), [0, gid, 0o750]);
    assert.deepEqual(owner('etc/berth/webmail/config.inc.php'), [0, gid, 0o640]);
    assert.deepEqual(owner('etc/berth/webmail/des_key'), [0, 0, 0o600]);
    assert.deepEqual(owner('var/lib/berth-webmail'), [uid, gid, 0o700]);
    const key = read('etc/berth/webmail/des_key').trim();
    assert.match(key, /^[A-Za-z0-9]{24}$/);
    const config = read('etc/berth/webmail/config.inc.php');
    assert.ok(config.includes(`$config['des_key'] = '${key}';`));
    assert.match(
      config,
      /\$config\['db_dsnw'\] = 'sqlite:\/\/\/\/var\/lib\/berth-webmail\/roundcube\.sqlite\?mode=0600';/,
    );
    assert.match(config, /\$config\['imap_host'\] = '127\.0\.0\.1:143';/);
    assert.match(config, /\$config\['smtp_host'\] = 'tls:\/\/127\.0\.0\.1:587';/);
    assert.match(config, /\$config\['smtp_user'\] = '%u';/);
    assert.match(config, /\$config\['plugins'\] = \[\];/);
    assert.match(config, /\$config\['session_samesite'\] = 'Strict';/);
    assert.match(config, /\$config\['login_rate_limit'\] = 3;/);
    execFileSync('/usr/bin/php', ['-l', file('etc/berth/webmail/config.inc.php')], { stdio: 'pipe' });
    for (const name of ['defaults.inc.php', 'mimetypes.php'])
      assert.equal(readlinkSync(file(`etc/berth/webmail/${name}`)), `/etc/roundcube/${name}`);
    // Kept when Berth starts again: a new key would end every webmail session.
    await h.services.driver.prepare?.();
    assert.equal(read('etc/berth/webmail/des_key').trim(), key);
  });

  it('runs its PHP as its own user behind a socket only the web server may use', () => {
    const pool = read('etc/berth/webmail/php-fpm.conf');
    assert.deepEqual(owner('etc/berth/webmail/php-fpm.conf'), [0, 0, 0o600]);
    assert.match(pool, /^user = berth-webmail$/m);
    assert.match(pool, /^group = berth-webmail$/m);
    assert.match(pool, /^listen = \/run\/berth\/webmail\/php\.sock$/m);
    assert.match(pool, /^listen\.owner = www-data$/m);
    assert.match(pool, /^listen\.mode = 0600$/m);
    assert.match(pool, /^env\[ROUNDCUBE_CONFIG_DIR\] = \/etc\/berth\/webmail$/m);
    assert.match(pool, /^php_admin_flag\[session\.cookie_secure\] = on$/m);
    assert.match(pool, /^php_admin_flag\[session\.cookie_httponly\] = on$/m);
    assert.match(pool, /^php_admin_value\[session\.cookie_samesite\] = Strict$/m);
  });

  it("serves it on webmail_port with the server's certificate, in a server block nginx accepts", async () => {
    const tls = join(h.services.config.dataDir, 'tls');
    mkdirSync(tls, { recursive: true });
    execFileSync(
      '/usr/bin/openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-subj',
        '/CN=panel.example.net',
        '-days',
        '1',
        '-keyout',
        join(tls, 'key.pem'),
        '-out',
        join(tls, 'cert.pem'),
      ],
      { stdio: 'pipe' },
    );
    await h.services.driver.prepare?.();
    const block = read('etc/nginx/conf.d/berth-webmail.conf');
    assert.match(block, /^ {4}listen 127\.0\.0\.1:2096 ssl;$/m);
    assert.ok(block.includes(`ssl_certificate ${join(tls, 'cert.pem')};`));
    assert.match(block, /^ {4}root \/var\/lib\/roundcube\/public_html;$/m);
    assert.ok(block.includes(`fastcgi_pass unix:${file('run/berth/webmail/php.sock')};`));
    nginxAccepts(h.root);
    assert.deepEqual(await inspect(h.services), []);
  });

  it('berth doctor finds its files changed, their modes loosened or gone', async () => {
    chmodSync(file('etc/berth/webmail/config.inc.php'), 0o644);
    rmSync(file('etc/berth/webmail/des_key'));
    const found = await inspect(h.services);
    assert.ok(
      found.some((line) => /config\.inc\.php is 0:\d+ 644, not 0:\d+ 640/.test(line)),
      found.join('\n'),
    );
    assert.ok(
      found.some((line) => /no DES key \/etc\/berth\/webmail\/des_key/.test(line)),
      found.join('\n'),
    );
    // Berth's next start puts them right (a new key, as there was none).
    await h.services.driver.prepare?.();
    assert.deepEqual(await inspect(h.services), []);
    assert.equal(lstatSync(file('etc/berth/webmail/config.inc.php')).mode & 0o777, 0o640);
  });
});
