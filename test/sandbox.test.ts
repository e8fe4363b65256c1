// The whole hosting stack, end to end, in `berth sandbox` (CONTRACT §13), driven only through its
// JSON file, `sandbox exec` and the API, as a billing module's author would: an account's PHP page
// over HTTPS with a certificate Pebble issued through ACME, suspension, passwords, removal; then the
// sandbox stopped, and this machine exactly as before.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { verifySha512Crypt } from '../src/auth/sha512-crypt.js';
import type { SandboxInfo } from '../src/sandbox/sandbox.ts';
import { verifyDkim } from './dkim.ts';
import { tempDir } from './helpers.ts';
import {
  arrivedMessage,
  BERTH,
  curl,
  insecureRequest,
  mailCurl,
  type RunningSandbox,
  sandboxCall,
  sandboxReloads,
  sandboxSsh,
  sandboxSshSession,
  startSandbox,
  steadyLoad,
} from './process.ts';

/** What must be the same after the sandbox as before: users, homes, the services' configuration. */
function machineState(): string {
  const hash = createHash('sha256');
  const walk = (path: string) => {
    if (!existsSync(path)) return hash.update(`${path} missing\n`);
    const stat = statSync(path);
    hash.update(`${path} ${stat.mode} ${stat.uid}\n`);
    if (stat.isDirectory()) for (const name of readdirSync(path).sort()) walk(join(path, name));
    else if (stat.isFile()) hash.update(readFileSync(path));
  };
  for (const path of [
    '/etc/passwd',
    '/etc/shadow',
    '/etc/group',
    '/home',
    '/etc/nginx',
    '/etc/php',
    '/etc/bind',
    '/etc/berth',
    '/etc/postfix',
    '/etc/dovecot',
    '/etc/opendkim.conf',
    '/etc/ssh',
  ])
    walk(path);
  return hash.digest('hex');
}

describe('berth sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  const machineBefore = machineState();
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  /** A page of a site over HTTPS, verified against Pebble's root only. */
  const site = (domain: string, path = '/') =>
    curl([
      '--resolve',
      `${domain}:${sandbox.https_port}:127.0.0.1`,
      '--cacert',
      sandbox.acme_root_ca,
      `https://${domain}:${sandbox.https_port}${path}`,
    ]);
  /** An operation of the API (`path` api/v1), or one for a holder (`path` api/account). */
  const call = async (operation: string, params: Record<string, string>, path = 'api/v1') => {
    const body = new URLSearchParams({ apiuser: sandbox.api_user, apiauth: sandbox.api_password, ...params });
    const reply = curl(['-k', '--data', body.toString(), `${sandbox.api}${path}/${operation}/`]);
    return { status: reply.status, body: JSON.parse(reply.body) as { info: string; status: number } };
  };
  const exec = (args: string[]) => running.exec(args);
  /** The pids of the account's PHP-FPM master (none while it has none). */
  const masterOf = async (user: string) =>
    (
      await exec(['/usr/bin/pgrep', '-f', `^php-fpm: master process \\(/etc/berth/php-fpm/${user}\\.conf\\)`])
    ).stdout
      .split('\n')
      .filter(Boolean);
  /** The path nginx passes the account's PHP requests to (its pool names it to the master). */
  const socketOf = async (user: string) => {
    const pool = (await exec(['/usr/bin/cat', `/etc/berth/php-fpm/${user}.conf`])).stdout;
    const name = /^listen = \S+\/(berth-[0-9a-f]+\.sock)$/m.exec(pool)?.[1];
    assert.ok(name, 'the pool names the socket');
    return `/run/berth/php/${name}`;
  };
  /** A shell command run as the account's user, inside the sandbox. */
  const asAlice = async (script: string) => {
    const result = await running.asUser('alice', script);
    assert.equal(result.code, 0, result.stderr);
  };

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
  });

  it('serves an account made through the API: PHP as its user, over HTTPS with an ACME certificate', async () => {
    for (const field of [
      'api',
      'reseller_api',
      'api_user',
      'api_password',
      'portal_password',
      'http_port',
      'https_port',
      'dns_port',
      'ssh_port',
      'smtp_port',
      'submission_port',
      'imap_port',
      'ftp_port',
      'webmail_url',
      'acme_root_ca',
      'pid',
    ])
      assert.ok(field in sandbox, `the JSON file has ${field}`);
    const created = await call('createacct', {
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'First-pass-1234',
    });
    assert.equal(created.body.status, 200, created.body.info);
    // HTTPS serves the site as soon as createacct has answered (an empty public_html: 403), with
    // the fallback certificate or already the ACME one.
    const early = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/`,
    ]);
    assert.equal(early.status, 403);
    // No PHP-FPM master runs for her yet: her socket is held, and her first PHP request starts it.
    assert.equal((await masterOf('alice')).length, 0, 'no master before a PHP request');
    assert.equal((await exec(['/usr/bin/test', '-S', await socketOf('alice')])).code, 0, 'her socket');

    await asAlice(
      'echo \'<?php echo "hello from ", posix_getpwuid(posix_geteuid())["name"];\' > /home/alice/public_html/index.php',
    );

    // The ACME certificate arrives after the call: curl verifies it against Pebble's root only.
    let page = site('alice.example');
    for (let i = 0; i < 100 && page.status !== 200; i++) {
      await sleep(200);
      page = site('alice.example');
    }
    assert.equal(page.status, 200, running.output());
    assert.equal(page.body, 'hello from alice');
    assert.equal(site('www.alice.example').body, 'hello from alice');

    const certs = await exec([process.execPath, BERTH, 'certs', '--json', '--data-dir', '/var/lib/berth']);
    const [row] = JSON.parse(certs.stdout) as { state: string; issuer: string }[];
    assert.equal(row?.state, 'valid');
    assert.match(row!.issuer, /Pebble/);

    // PHP is confined to the home (open_basedir) and runs nothing of another account's.
    await asAlice(
      'echo \'<?php var_dump(@file_get_contents("/etc/passwd"));\' > /home/alice/public_html/peek.php',
    );
    const peek = site('alice.example', '/peek.php');
    assert.equal(peek.body.trim(), 'bool(false)');

    // HTTP redirects to HTTPS, but for the challenge path.
    const http = (path: string) =>
      curl([
        '--resolve',
        `alice.example:${sandbox.http_port}:127.0.0.1`,
        '-o',
        '/dev/null',
        `http://alice.example:${sandbox.http_port}${path}`,
      ]);
    assert.equal(http('/').status, 301);
    assert.equal(http('/.well-known/acme-challenge/unknown-token').status, 404);
    // Dotfiles are refused.
    await asAlice('echo secret > /home/alice/public_html/.env');
    assert.equal(site('alice.example', '/.env').status, 403);
    // The home is root's: the customer cannot turn public_html into a link to /etc. A link in
    // public_html to /etc is not followed by nginx either (its target is not the customer's).
    const moved = await exec([
      '/usr/sbin/runuser',
      '-u',
      'alice',
      '--',
      '/bin/mv',
      '/home/alice/public_html',
      '/home/alice/site',
    ]);
    assert.notEqual(moved.code, 0);
    await asAlice('ln -s /etc /home/alice/public_html/etc');
    // Not served: the address is no file of the site's, so the site's own index.php answers it.
    const linked = site('alice.example', '/etc/passwd');
    assert.doesNotMatch(linked.body, /root:x:0:0/);
    assert.equal(linked.body, site('alice.example', '/').body);
    assert.equal(site('alice.example').status, 200);
  });

  it("adds a domain while nginx's master is stopped: no change waits for nginx, none reloads it", async () => {
    // nginx finds every site by its directory on each request: a domain is served the moment the
    // call answers, whatever nginx's master is doing (here, stopped outright).
    const master = (await exec(['/usr/bin/cat', '/run/nginx.pid'])).stdout.trim();
    const workers = (await exec(['/usr/bin/pgrep', '-P', master])).stdout;
    assert.equal((await exec(['/usr/bin/kill', '-STOP', master])).code, 0);
    try {
      const domain = { user: 'alice', domain: 'alice-parked.example', type: 'parked' };
      const answer = await call('add_domain', domain, 'api/account');
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      // Served with this server's certificate until ACME's comes: verified against nothing here.
      const parked = curl([
        '--resolve',
        `alice-parked.example:${sandbox.https_port}:127.0.0.1`,
        '-k',
        `https://alice-parked.example:${sandbox.https_port}/`,
      ]);
      assert.equal(parked.body, site('alice.example').body);
    } finally {
      await exec(['/usr/bin/kill', '-CONT', master]);
    }
    assert.equal((await exec(['/usr/bin/pgrep', '-P', master])).stdout, workers, 'the same workers serve');
    const removed = await call(
      'remove_domain',
      { user: 'alice', domain: 'alice-parked.example' },
      'api/account',
    );
    assert.equal(removed.status, 200);
    const gone = curl([
      '--resolve',
      `alice-parked.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice-parked.example:${sandbox.https_port}/`,
    ]);
    assert.notEqual(gone.status, 200);
  });

  it('suspends (503), unsuspends (200), changes the password, removes every trace', async () => {
    const socket = await socketOf('alice');
    assert.notEqual((await masterOf('alice')).length, 0, 'her PHP runs');
    assert.equal((await call('suspendacct', { user: 'alice', reason: 'unpaid' })).body.status, 200);
    assert.equal(site('alice.example').status, 503);
    // Suspended: no master, and no socket a request could start one on.
    assert.equal((await masterOf('alice')).length, 0, 'no master while suspended');
    assert.equal((await exec(['/usr/bin/test', '-e', socket])).code, 1, 'no socket while suspended');
    assert.equal((await call('unsuspendacct', { user: 'alice' })).body.status, 200);
    assert.equal((await exec(['/usr/bin/test', '-S', socket])).code, 0, 'her socket is held again');
    assert.equal((await masterOf('alice')).length, 0, 'no master until a PHP request');
    assert.equal(site('alice.example').status, 200);
    assert.notEqual((await masterOf('alice')).length, 0, 'the request started her master');

    assert.equal((await call('passwd', { user: 'alice', password: 'Second-pass-5678' })).body.status, 200);
    const shadow = (await exec(['/usr/bin/getent', 'shadow', 'alice'])).stdout.split(':')[1]!;
    assert.ok(verifySha512Crypt('Second-pass-5678', shadow));

    assert.equal((await call('removeacct', { user: 'alice' })).body.status, 200);
    assert.equal(site('alice.example').status, 0, 'the site is gone');
    assert.equal((await exec(['/usr/bin/getent', 'passwd', 'alice'])).code, 2);
    assert.equal((await exec(['/usr/bin/test', '-e', '/home/alice'])).code, 1);
    const doctor = await exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth']);
    assert.equal(doctor.code, 0, doctor.stdout);
  });

  const smtpTo = (port: number, from: string, to: string, login: string | null, message: string) => {
    const file = join(dataDir, 'message.eml');
    writeFileSync(file, message.replace(/\n/g, '\r\n'));
    return mailCurl(sandbox, port, [
      `smtp://sandbox.test:${port}`,
      '--mail-from',
      from,
      '--mail-rcpt',
      to,
      ...(login ? ['-u', login] : []),
      '-T',
      file,
    ]).ok;
  };
  const imap = (login: string, path = 'INBOX') =>
    mailCurl(sandbox, sandbox.imap_port, [`imap://sandbox.test:${sandbox.imap_port}/${path}`, '-u', login]);
  /** The first message in the INBOX, once it has arrived. */
  const firstMessage = async (login: string) => {
    for (let i = 0; i < 50; i++) {
      const fetched = imap(login, 'INBOX;UID=1');
      if (fetched.ok && fetched.body !== '') return fetched.body;
      await sleep(200);
    }
    throw new Error(`no mail for ${login}`);
  };
  /** ssh (or sftp) with a password, as a person would type it. */
  const ssh = (program: 'ssh' | 'sftp', user: string, password: string, args: string[], input = '') =>
    sandboxSsh(sandbox, program, user, password, args, input);

  it('delivers mail to IMAP, signs submitted mail with DKIM, and gives a jailed shell or SFTP alone', async () => {
    for (const [user, shell] of [
      ['dora', '1'],
      ['emil', '0'],
    ] as const) {
      const made = await call('createacct', {
        user,
        domain: `${user}.example`,
        email: `${user}@example.org`,
        package: 'default',
        password: `Pass-${user}-1234`,
        shell,
        mailquota: '50',
      });
      assert.equal(made.body.status, 200, made.body.info);
    }
    // Mail from outside to <user>@<domain> is in the account's INBOX over IMAP (TLS, its password).
    assert.equal(
      smtpTo(
        sandbox.smtp_port,
        'someone@example.net',
        'dora@dora.example',
        null,
        'Subject: hello\n\nHi Dora.\n',
      ),
      true,
    );
    assert.match(await firstMessage('dora:Pass-dora-1234'), /Hi Dora\./);
    assert.equal(imap('dora:wrong-password').ok, false);
    assert.equal(smtpTo(sandbox.smtp_port, 'someone@example.net', 'nobody@dora.example', null, 'x\n'), false);

    // Submission needs the account's login, and only for its own domain; what it sends is signed
    // with the key the sandbox's BIND publishes.
    const message = 'From: dora@dora.example\nTo: emil@emil.example\nSubject: signed\n\nHello Emil.\n';
    assert.equal(
      smtpTo(sandbox.submission_port, 'dora@dora.example', 'emil@emil.example', null, message),
      false,
    );
    assert.equal(
      smtpTo(
        sandbox.submission_port,
        'emil@emil.example',
        'emil@emil.example',
        'dora:Pass-dora-1234',
        message,
      ),
      false,
      'dora may not send as emil',
    );
    assert.equal(
      smtpTo(
        sandbox.submission_port,
        'dora@dora.example',
        'emil@emil.example',
        'dora@dora.example:Pass-dora-1234',
        message,
      ),
      true,
    );
    const signed = await firstMessage('emil@emil.example:Pass-emil-1234');
    const resolver = new Resolver();
    resolver.setServers([`127.0.0.1:${sandbox.dns_port}`]);
    const txt = (await resolver.resolveTxt('default._domainkey.dora.example')).map((parts) => parts.join(''));
    const publicKey = /p=([A-Za-z0-9+/=]+)/.exec(txt[0] ?? '')?.[1];
    assert.ok(publicKey, `a DKIM record: ${txt}`);
    assert.equal(verifyDkim(signed, publicKey), 'dora.example');

    // shell=on: a jail with the account's home alone, no /etc/shadow, ps showing its own
    // processes alone, PHP.
    const inJail = ssh('ssh', 'dora', 'Pass-dora-1234', [
      'ls /home; cat /etc/shadow || echo no-shadow; ps -e -o user= | sort -u | tr "\\n" " "; echo; php -r "echo PHP_VERSION;"; echo; id -un; git --version; rsync --version | head -n 1',
    ]);
    assert.equal(inJail.code, 0, inJail.stderr);
    const lines = inJail.stdout.trim().split('\n');
    assert.deepEqual(lines.slice(0, 3), ['dora', 'no-shadow', 'dora ']);
    assert.match(lines[3]!, /^8\.\d+\.\d+$/);
    assert.equal(lines[4], 'dora');
    assert.match(lines[5]!, /^git version/);
    assert.match(lines[6]!, /^rsync +version/);

    // shell=off: SFTP into public_html, served at once; no command runs.
    const upload = join(dataDir, 'index.php');
    writeFileSync(upload, '<?php echo "uploaded by ", posix_getpwuid(posix_geteuid())["name"];');
    const sftp = ssh('sftp', 'emil', 'Pass-emil-1234', [], `put ${upload} /public_html/index.php\nls /\n`);
    assert.equal(sftp.code, 0, sftp.stderr);
    assert.match(sftp.stdout, /public_html/);
    const served = curl([
      '--resolve',
      `emil.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://emil.example:${sandbox.https_port}/`,
    ]);
    assert.equal(served.body, 'uploaded by emil');
    const command = ssh('ssh', 'emil', 'Pass-emil-1234', ['echo executed']);
    assert.doesNotMatch(command.stdout, /executed/);
  });

  it('gives every file the mode docs/linux-driver.md lists, running under umask 0077 as its unit does', async () => {
    const berthPid = (await exec(['/usr/bin/pgrep', '-f', '-o', 'berth.js serve'])).stdout.trim();
    const status = await exec(['/usr/bin/cat', `/proc/${berthPid}/status`]);
    assert.match(status.stdout, /^Umask:\s+0077$/m);
    const docs = readFileSync(new URL('../docs/linux-driver.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('## Files and modes'), docs.indexOf('## Customer files'));
    const rows = [...section.matchAll(/^\| `([^`]+)` \| (0[0-7]{3}) \| ([^|]+?) \|$/gm)];
    assert.ok(rows.length > 30, `the table has ${rows.length} rows`);
    const php = readdirSync('/etc/php').find((name) => existsSync(join('/etc/php', name, 'fpm')))!;
    const fill = (text: string) =>
      text.replaceAll('<user>', 'dora').replaceAll('<domain>', 'dora.example').replaceAll('<php>', php);
    const paths = rows.map((row) => fill(row[1]!));
    // Her PHP's view of /etc is made when her master starts: at her site's first PHP request.
    assert.equal((await running.asUser('dora', "echo '<?php echo 7;' > ~/public_html/seven.php")).code, 0);
    const seven = await insecureRequest(sandbox.https_port, '/seven.php', { servername: 'dora.example' });
    assert.equal(seven.body, '7');
    const stat = await exec(['/usr/bin/stat', '-c', '%a %U:%G', '--', ...paths]);
    assert.equal(stat.code, 0, stat.stderr);
    const found = stat.stdout.trim().split('\n');
    rows.forEach((row, i) => {
      const [mode, owner] = found[i]!.split(' ');
      const expected = fill(row[3]!);
      assert.equal(`0${mode}`, row[2], `${paths[i]}: mode`);
      assert.equal(expected.includes(':') ? owner : owner!.split(':')[0], expected, `${paths[i]}: owner`);
    });
  });

  it('refuses every login of a suspended account while its mail still arrives; passwd changes them all', async () => {
    assert.equal((await call('suspendacct', { user: 'dora', reason: 'unpaid' })).body.status, 200);
    assert.equal(imap('dora:Pass-dora-1234').ok, false, 'IMAP refused');
    assert.notEqual(ssh('ssh', 'dora', 'Pass-dora-1234', ['true']).code, 0, 'SSH refused');
    assert.equal(
      smtpTo(sandbox.submission_port, 'dora@dora.example', 'emil@emil.example', 'dora:Pass-dora-1234', 'x\n'),
      false,
      'submission refused',
    );
    assert.equal(
      smtpTo(
        sandbox.smtp_port,
        'someone@example.net',
        'dora@dora.example',
        null,
        'Subject: while away\n\nKept.\n',
      ),
      true,
      'mail still arrives',
    );
    assert.equal((await call('suspendacct', { user: 'emil', reason: 'unpaid' })).body.status, 200);
    assert.notEqual(ssh('sftp', 'emil', 'Pass-emil-1234', [], 'ls /\n').code, 0, 'SFTP refused');
    assert.equal((await call('unsuspendacct', { user: 'dora' })).body.status, 200);
    assert.equal((await call('unsuspendacct', { user: 'emil' })).body.status, 200);
    // Delivered after smtpd took it: read once it has arrived.
    assert.match(await arrivedMessage(sandbox, 'dora:Pass-dora-1234', 2), /Kept\./);

    assert.equal((await call('passwd', { user: 'dora', password: 'New-pass-dora-99' })).body.status, 200);
    assert.equal(imap('dora:Pass-dora-1234').ok, false);
    assert.equal(imap('dora:New-pass-dora-99').ok, true);
    assert.equal(ssh('ssh', 'dora', 'New-pass-dora-99', ['true']).code, 0);
    assert.notEqual(ssh('ssh', 'dora', 'Pass-dora-1234', ['true']).code, 0);
  });

  it('changepackage switches the shell and the mail quota; removal leaves no trace, even after logins', async () => {
    const pkg = await call('addpkg', { name: 'sftponly', shell: 'off', mailquota: '7' });
    assert.equal(pkg.body.status, 200, pkg.body.info);
    // A process the shell left running ends with the shell; the site's PHP serves on.
    assert.equal(
      (await running.asUser('dora', "echo '<?php echo 6 * 7;' > ~/public_html/answer.php")).code,
      0,
    );
    const session = sandboxSshSession(sandbox, 'dora', 'New-pass-dora-99', ['sleep 600']);
    const ended = new Promise((resolve) => session.once('exit', () => resolve('ended')));
    try {
      let started = false;
      for (let i = 0; i < 40 && !started; i++) {
        await sleep(500);
        started = (await exec(['/usr/bin/pgrep', '-u', 'dora', 'sleep'])).code === 0;
      }
      assert.ok(started, 'the session runs');
      assert.equal((await call('changepackage', { user: 'dora', package: 'sftponly' })).body.status, 200);
      assert.equal(
        await Promise.race([ended, sleep(20_000, 'still open')]),
        'ended',
        'the session is closed',
      );
    } finally {
      session.kill();
    }
    assert.notEqual(
      (await exec(['/usr/bin/pgrep', '-u', 'dora', 'sleep'])).code,
      0,
      'the shell left nothing',
    );
    const php = await insecureRequest(sandbox.https_port, '/answer.php', { servername: 'dora.example' });
    assert.equal(php.body, '42');
    assert.doesNotMatch(ssh('ssh', 'dora', 'New-pass-dora-99', ['echo executed']).stdout, /executed/);
    assert.equal((await exec(['/usr/bin/test', '-e', '/home/dora/usr'])).code, 1, 'the jail is gone');
    const quota = await exec(['/usr/bin/doveadm', 'quota', 'get', '-u', 'dora']);
    assert.match(quota.stdout, /STORAGE\s+\d+\s+7168\b/, quota.stdout);
    assert.equal((await call('changepackage', { user: 'emil', package: 'sftponly' })).body.status, 200);

    for (const user of ['dora', 'emil']) {
      const removed = await call('removeacct', { user });
      assert.equal(removed.body.status, 200, removed.body.info);
    }
    const left = await exec([
      '/bin/sh',
      '-c',
      'ls -a /home; cat /etc/postfix/berth/* /etc/dovecot/berth/* /etc/opendkim/berth/*; ls /etc/berth/mail /etc/berth/dkim; getent group berth-shell berth-sftp',
    ]);
    assert.doesNotMatch(left.stdout, /dora|emil/);
    // Nor does Postfix find them in the tables Berth serves it, asking as it does (postmap exits 1
    // for a key not found).
    for (const [table, key] of [
      ['domains', 'dora.example'],
      ['mailboxes', 'dora@dora.example'],
      ['senders', 'dora@dora.example'],
      ['local-aliases', 'dora'],
      ['local-aliases', 'emil'],
    ]) {
      const found = await exec([
        '/usr/sbin/postmap',
        '-q',
        key!,
        `socketmap:unix:/var/spool/postfix/berth/tables.sock:${table}`,
      ]);
      assert.equal(found.code, 1, `${table} ${key}: ${found.stdout}${found.stderr}`);
    }
    assert.equal(imap('dora:New-pass-dora-99').ok, false);
    assert.equal(smtpTo(sandbox.smtp_port, 'someone@example.net', 'dora@dora.example', null, 'x\n'), false);
    const doctor = await exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth']);
    assert.equal(doctor.code, 0, doctor.stdout);
  });

  it('serves a burst of suspensions from parallel clients with no nginx reload, other sites answering throughout', async () => {
    const users = Array.from({ length: 12 }, (_, i) => `burst${i}`);
    const create = (user: string) =>
      sandboxCall(sandbox, 'createacct', {
        user,
        domain: `${user}.example`,
        email: 'o@example.com',
        package: 'default',
        password: 'Burst-pass-1234',
      });
    // Made in parallel too: each answers once its site is served.
    for (const reply of await Promise.all(['steady', ...users].map(create)))
      assert.equal(reply.status, 200, reply.info);
    const page = "/bin/sh -c 'echo up > ~/public_html/index.html'";
    for (const user of ['steady', ...users]) assert.equal((await running.asUser(user, page)).code, 0);

    for (const [operation, status] of [
      ['suspendacct', 503],
      ['unsuspendacct', 200],
    ] as const) {
      const load = steadyLoad(sandbox, 'steady.example');
      try {
        const before = await sandboxReloads(sandbox);
        const replies = await Promise.all(users.map((user) => sandboxCall(sandbox, operation, { user })));
        for (const reply of replies) assert.equal(reply.status, 200, reply.info);
        // Each call answered once its change was live: every site already shows it.
        for (const user of users) {
          const reply = await insecureRequest(sandbox.https_port, '/', { servername: `${user}.example` });
          assert.equal(reply.status, status, `${operation} ${user}`);
        }
        const after = await sandboxReloads(sandbox);
        const nginx = (after.nginx ?? 0) - (before.nginx ?? 0);
        // A suspension is a file nginx looks for on each request: its configuration is not read again.
        assert.equal(nginx, 0, `${users.length} ${operation} calls took ${nginx} nginx reloads`);
      } finally {
        await load.stop();
      }
      const seen = await load.stop();
      assert.ok(seen.requests > 0);
      assert.deepEqual(seen.errors, [], `the steady site during the ${operation} burst`);
    }
    for (const reply of await Promise.all(
      ['steady', ...users].map((user) => sandboxCall(sandbox, 'removeacct', { user })),
    ))
      assert.equal(reply.status, 200, reply.info);
  });

  it("cannot be locked out of the API by an account's PHP failing logins from 127.0.0.1 (trusted_addresses)", async () => {
    const created = await call('createacct', {
      user: 'mallory',
      domain: 'mallory.example',
      email: 'mallory@example.org',
      package: 'default',
      password: 'Pass-mallory-1234',
    });
    assert.equal(created.body.status, 200, created.body.info);
    // Twelve guesses at the billing system's API password, more than the lock-out allows.
    const guesses = [
      '<?php',
      '$codes = [];',
      'for ($i = 0; $i < 12; $i++) {',
      '  $context = stream_context_create([',
      '    "http" => ["method" => "POST", "ignore_errors" => true, "timeout" => 20,',
      '      "header" => "Content-Type: application/x-www-form-urlencoded",',
      `      "content" => "apiuser=${sandbox.api_user}&apiauth=guess-number-$i"],`,
      '    "ssl" => ["verify_peer" => false, "verify_peer_name" => false],',
      '  ]);',
      `  @file_get_contents("${sandbox.api}api/v1/test_connection/", false, $context);`,
      '  $codes[] = explode(" ", $http_response_header[0] ?? "none 0")[1];',
      '}',
      'echo implode(",", $codes);',
    ].join('\n');
    const written = await exec([
      '/usr/sbin/runuser',
      '-u',
      'mallory',
      '--',
      '/bin/sh',
      '-c',
      `echo ${Buffer.from(guesses).toString('base64')} | base64 -d > /home/mallory/public_html/guess.php`,
    ]);
    assert.equal(written.code, 0, written.stderr);
    const page = curl([
      '--resolve',
      `mallory.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://mallory.example:${sandbox.https_port}/guess.php`,
    ]);
    assert.equal(page.status, 200, page.body);
    assert.equal(page.body, new Array(12).fill('403').join(','), 'every guess refused, none locked');
    // The billing system, calling from the same 127.0.0.1, is served.
    const billing = await call('test_connection', {});
    assert.equal(billing.status, 200, billing.body.info);
  });

  it("keeps Berth's data directory root's alone, inside the sandbox and out", async () => {
    const created = await call('createacct', {
      user: 'peeker',
      domain: 'peeker.example',
      email: 'peeker@example.org',
      package: 'default',
      password: 'Pass-peeker-1234',
    });
    assert.equal(created.body.status, 200, created.body.info);
    const listed = await exec(['/usr/sbin/runuser', '-u', 'peeker', '--', '/bin/ls', '/var/lib/berth']);
    assert.notEqual(listed.code, 0, 'an account cannot list the data directory');
    assert.match(listed.stderr, /Permission denied/);
    const mode = await exec(['/usr/bin/stat', '-c', '%a %U', '--', '/var/lib/berth']);
    assert.equal(mode.stdout.trim(), '700 root');
    // Nothing in it is open to others, whoever made it (Berth, `berth` commands, the sandbox), the
    // ACME account key made for the account's certificate included.
    for (let i = 0; i < 100; i++) {
      if ((await exec(['/usr/bin/test', '-e', '/var/lib/berth/acme/account-key.pem'])).code === 0) break;
      await sleep(200);
    }
    const open = await exec(['/usr/bin/find', '/var/lib/berth', '-perm', '/o=rwx']);
    assert.equal(open.code, 0, open.stderr);
    assert.equal(open.stdout, '');
    // This machine's side: the JSON file with the passwords, the certificates, the layers.
    const outside = join(dataDir, 'sandbox');
    assert.equal(statSync(outside).mode & 0o777, 0o700);
    for (const name of readdirSync(outside))
      assert.equal(statSync(join(outside, name)).mode & 0o007, 0, `${name} is closed to others`);
  });

  it('stops on SIGTERM and leaves this machine as it was', async () => {
    // The accounts' control groups are the machine's (the hierarchies are shared): they go too.
    const parent = /^cgroup_parent = "([^"]+)"$/m.exec(
      (await exec(['/usr/bin/cat', '/var/lib/berth/berth.toml'])).stdout,
    )?.[1];
    assert.ok(parent, 'the sandbox names its control groups');
    const ended = new Promise<number | null>((resolve) => running.child.once('exit', resolve));
    process.kill(sandbox.pid, 'SIGTERM');
    assert.equal(await ended, 0, running.output());
    assert.equal(machineState(), machineBefore);
    assert.equal(existsSync(join(dataDir, 'sandbox')), false);
    for (const hierarchy of ['', ...readdirSync('/sys/fs/cgroup')])
      assert.equal(
        existsSync(join('/sys/fs/cgroup', hierarchy, parent)),
        false,
        `${hierarchy}/${parent} is left`,
      );
    assert.equal(curl([`http://127.0.0.1:${sandbox.http_port}/`]).status, 0, 'nothing listens any more');
  });
});
