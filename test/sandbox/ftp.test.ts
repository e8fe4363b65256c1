// FTP accounts in the sandbox (CONTRACT §14) with curl, as a web designer's client would: explicit
// TLS required (a login in clear text refused), a file uploaded as alice's FTP account into
// public_html served by alice's site over HTTPS and owned by alice, the FTP account confined to its
// directory (`..`, absolute paths, links alice's shell planted towards /etc and bob's home), bob's
// credentials and logins reaching none of alice's files, an FTP account's own quota, the ftp limit,
// the session in alice's control group, suspension refusing every login and ending open sessions,
// removal; the account's own login over FTPS too, confined to its home; an FTP account's
// directory swapped for a link to bob's public_html or to / after it was made: the login stays in
// its own (pinned) directory.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  sandboxWithAccounts,
} from '../process.ts';

describe('FTP accounts, in the sandbox', () => {
  const dataDir = tempDir('berth-sandbox-');
  const files = tempDir('berth-ftp-files-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const asHolder = async (user: string, operation: string, params: Record<string, string> = {}) => {
    const password = `${user[0]!.toUpperCase()}${user.slice(1)}-pass-1234`;
    return await sandboxHolderCall(sandbox, { user, password }, operation, params);
  };
  /** curl on the sandbox's FTP, with explicit TLS required, verifying the server's certificate. */
  const ftps = (login: string, password: string, path: string, args: string[] = []) =>
    curl([
      '--ssl-reqd',
      '--cacert',
      sandbox.fallback_ca,
      '--resolve',
      `sandbox.test:${sandbox.ftp_port}:127.0.0.1`,
      '--user',
      `${login}:${password}`,
      ...args,
      `ftp://sandbox.test:${sandbox.ftp_port}${path}`,
    ]);
  /** A local file to upload. */
  const local = (name: string, content: string | Buffer) => {
    const path = join(files, name);
    writeFileSync(path, content);
    return path;
  };
  const exec = async (args: string[]) => (await running.exec(args)).stdout.trim();
  const DESIGNER = ['designer@alice.example', 'Design-pass-1234'] as const;

  before(async () => {
    running = await sandboxWithAccounts(dataDir, ['bob']);
    sandbox = running.info;
    const alice = await sandboxCall(sandbox, 'createacct', {
      user: 'alice',
      domain: 'alice.example',
      email: 'alice@example.org',
      package: 'default',
      password: 'Alice-pass-1234',
      shell: '1',
      ftp: '3',
    });
    assert.equal(alice.status, 200, alice.info);
    const made = await asHolder('alice', 'add_ftp_account', {
      login: 'designer',
      password: DESIGNER[1],
      directory: 'public_html',
    });
    assert.equal(made.status, 200, made.body.info);
  });
  after(() => {
    if (running.child.exitCode === null) running.child.kill('SIGKILL');
    rmSync(files, { recursive: true, force: true });
  });

  it('a file uploaded over FTPS as alice’s FTP account is alice’s and served by alice’s site', async () => {
    const page = local('ftp-page.html', 'Uploaded by the designer\n');
    const upload = ftps(...DESIGNER, '/ftp-page.html', ['-T', page]);
    assert.ok(upload.ok, 'upload failed');
    assert.equal(
      await exec(['/usr/bin/stat', '-c', '%U %a', '/home/alice/public_html/ftp-page.html']),
      'alice 644',
    );
    const site = curl([
      '--resolve',
      `alice.example:${sandbox.https_port}:127.0.0.1`,
      '-k',
      `https://alice.example:${sandbox.https_port}/ftp-page.html`,
    ]);
    assert.deepEqual([site.status, site.body], [200, 'Uploaded by the designer\n']);
    // The listing is the directory itself, at /.
    assert.match(ftps(...DESIGNER, '/').body, /ftp-page\.html/);
  });

  it('refuses a login in clear text, and nothing is uploaded', async () => {
    const plain = curl([
      '--max-time',
      '15',
      '--user',
      DESIGNER.join(':'),
      '-T',
      local('clear.txt', 'clear\n'),
      `ftp://127.0.0.1:${sandbox.ftp_port}/clear.txt`,
    ]);
    assert.equal(plain.ok, false);
    assert.equal(
      await exec(['/usr/bin/ls', '/home/alice/public_html']).then((l) => l.includes('clear.txt')),
      false,
    );
  });

  it('the FTP account cannot leave its directory: .., absolute paths, links planted towards /etc and bob', async () => {
    const secret = await running.asUser(
      'bob',
      'echo bob-secret > /home/bob/public_html/bob-secret.html && echo made',
    );
    assert.match(secret.stdout, /made/);
    const planted = await running.asUser(
      'alice',
      'ln -s /etc /home/alice/public_html/etc-link && ln -s /home/bob /home/alice/public_html/bob-link && ln -s / /home/alice/public_html/root-link && echo planted',
    );
    assert.match(planted.stdout, /planted/);
    for (const path of [
      '/../',
      '/../../etc/passwd',
      '//etc/passwd',
      '/etc-link/passwd',
      '/root-link/etc/passwd',
      '/bob-link/public_html/',
      '/../Maildir/',
      '/../../bob/public_html/',
    ]) {
      const got = ftps(...DESIGNER, path);
      // Neither the server's files, nor bob's, nor alice's home above the directory.
      assert.doesNotMatch(got.body, /root:x:|bob-secret|Maildir|public_html/, `${path}: ${got.body}`);
    }
    // The chroot's / is public_html: its parent is itself.
    assert.match(ftps(...DESIGNER, '/../').body, /ftp-page\.html/);
    // Nothing written through a link either.
    const through = ftps(...DESIGNER, '/bob-link/public_html/planted.txt', ['-T', local('p.txt', 'x\n')]);
    assert.equal(through.ok, false);
    assert.equal(
      await exec(['/usr/bin/ls', '-a', '/home/bob/public_html']).then((l) => l.includes('planted')),
      false,
    );
  });

  it('bob’s credentials and logins reach none of alice’s files', async () => {
    assert.equal(ftps('designer@alice.example', 'Bob-pass-1234', '/').ok, false);
    assert.equal(ftps('alice', 'Bob-pass-1234', '/').ok, false);
    assert.equal(ftps('designer@bob.example', DESIGNER[1], '/').ok, false);
    const bob = ftps('bob', 'Bob-pass-1234', '/');
    assert.ok(bob.ok, 'bob’s own login');
    assert.match(bob.body, /public_html/);
    for (const path of [
      '/../alice/public_html/',
      '/home/alice/public_html/',
      '/../../home/alice/public_html/',
    ])
      assert.doesNotMatch(ftps('bob', 'Bob-pass-1234', path).body, /ftp-page/, path);
    // bob may not make an FTP account in alice's domain, nor reach alice's.
    const other = await asHolder('bob', 'change_ftp_password', {
      login: DESIGNER[0],
      password: 'Bob-owns-1234',
    });
    assert.equal(other.status, 400);
    assert.ok(ftps(...DESIGNER, '/').ok);
  });

  it('the account’s own login works over FTPS, confined to its home, and does not count', async () => {
    const own = ftps('alice', 'Alice-pass-1234', '/');
    assert.ok(own.ok);
    assert.match(own.body, /public_html/);
    // Its / is the home: above it is itself; its /etc is the shell's jail's, naming no other account.
    assert.match(ftps('alice', 'Alice-pass-1234', '/../').body, /public_html/);
    assert.doesNotMatch(ftps('alice', 'Alice-pass-1234', '//etc/passwd').body, /bob/);
    assert.doesNotMatch(ftps('alice', 'Alice-pass-1234', '/../bob/public_html/').body, /bob-secret/);
    assert.ok(ftps('alice', 'Alice-pass-1234', '/public_html/own.txt', ['-T', local('own.txt', 'own\n')]).ok);
    assert.equal(await exec(['/usr/bin/stat', '-c', '%U', '/home/alice/public_html/own.txt']), 'alice');
    const info = await asHolder('alice', 'account_info');
    assert.deepEqual((info.body.data as { limits: { ftp: unknown } }).limits.ftp, { used: 1, limit: '3' });
  });

  it('an FTP account’s quota stops an upload past it; the limit stops one more account', async () => {
    const small = await asHolder('alice', 'add_ftp_account', {
      login: 'small',
      password: 'Small-pass-1234',
      directory: 'public_html/small',
      quota: '1',
    });
    assert.equal(small.status, 200, small.body.info);
    const blob = local('blob.bin', randomBytes(700_000));
    assert.ok(ftps('small@alice.example', 'Small-pass-1234', '/a.bin', ['-T', blob]).ok);
    assert.equal(ftps('small@alice.example', 'Small-pass-1234', '/b.bin', ['-T', blob]).ok, false);
    const third = await asHolder('alice', 'add_ftp_account', { login: 'third', password: 'Third-pass-1234' });
    assert.equal(third.status, 200, third.body.info);
    const fourth = await asHolder('alice', 'add_ftp_account', {
      login: 'fourth',
      password: 'Third-pass-1234',
    });
    assert.equal(fourth.status, 400);
    assert.equal((fourth.body.data as { code: string }).code, 'limit_reached');
    assert.equal((await asHolder('alice', 'remove_ftp_account', { login: 'third' })).status, 200);
    assert.equal((await asHolder('alice', 'remove_ftp_account', { login: 'small' })).status, 200);
    assert.equal(ftps('small@alice.example', 'Small-pass-1234', '/').ok, false);
  });

  it('an FTP account stays in its own directory whatever alice puts in its place later: a link to bob’s public_html, to /', async () => {
    const SWAP = ['swap@alice.example', 'Swap-pass-1234'] as const;
    const made = await asHolder('alice', 'add_ftp_account', {
      login: 'swap',
      password: SWAP[1],
      directory: 'public_html/sub',
    });
    assert.equal(made.status, 200, made.body.info);
    assert.ok(ftps(...SWAP, '/mine.txt', ['-T', local('mine.txt', 'mine\n')]).ok);
    // The login's chroot is a bind mount of the directory, at a path of root's.
    assert.match(
      await exec(['/bin/cat', '/proc/self/mountinfo']),
      / \/var\/lib\/berth\/ftp-roots\/alice\/swap /,
    );
    assert.equal(await exec(['/usr/bin/stat', '-c', '%a %U', '/var/lib/berth/ftp-roots/alice']), '700 root');
    // bob's public_html is bob's and the web server's alone (0750): alice's shell cannot reach it,
    // nor the application in it whose configuration any user could read once inside.
    assert.equal(
      await exec(['/usr/bin/stat', '-c', '%a %U %G', '/home/bob/public_html']),
      '750 bob www-data',
    );
    const app = await running.asUser(
      'bob',
      'mkdir -m 755 /home/bob/public_html/app && echo bob-db-password > /home/bob/public_html/app/wp-config.php && chmod 644 /home/bob/public_html/app/wp-config.php && echo made',
    );
    assert.match(app.stdout, /made/);
    const direct = await running.asUser(
      'alice',
      'cat /home/bob/public_html/app/wp-config.php 2>&1; echo end',
    );
    assert.doesNotMatch(direct.stdout, /bob-db/);
    const seen = (path = '/') => ftps(...SWAP, path);
    const neither = (path = '/') => {
      const got = seen(path);
      assert.doesNotMatch(
        got.body,
        /bob-secret|bob-db|root:x:|\bvar\b|\betc\b|ftp-page/,
        `${path}: ${got.body}`,
      );
      return got;
    };
    // The directory renamed away and a link to bob's public_html in its place: still its own.
    const renamed = await running.asUser(
      'alice',
      'cd /home/alice/public_html && mv sub sub-old && ln -s /home/bob/public_html sub && echo swapped',
    );
    assert.match(renamed.stdout, /swapped/);
    assert.match(neither().body, /mine\.txt/);
    assert.match(neither('/bob-secret.html').body, /^$/);
    // A link to / in its place: still its own directory.
    const root = await running.asUser(
      'alice',
      'cd /home/alice/public_html && rm sub && ln -s / sub && echo swapped',
    );
    assert.match(root.stdout, /swapped/);
    assert.match(neither().body, /mine\.txt/);
    neither('/etc/passwd');
    // The directory removed: the login is left in nothing, and writes nowhere.
    const gone = await running.asUser('alice', 'rm -rf /home/alice/public_html/sub-old && echo removed');
    assert.match(gone.stdout, /removed/);
    assert.equal(neither().body.trim(), '');
    for (const path of ['/var/tmp/swap.txt', '/../var/tmp/swap.txt', '/tmp/swap.txt', '/swap.txt'])
      assert.equal(
        ftps(...SWAP, path, ['-T', local('swap.txt', 'x\n'), '--ftp-create-dirs']).ok,
        false,
        path,
      );
    assert.equal(await exec(['/bin/sh', '-c', 'ls /var/tmp /tmp | grep -c swap.txt || true']), '0');
    // The brief's own way: the directory made again then swapped for a link to bob's directory.
    const again = await asHolder('alice', 'remove_ftp_account', { login: 'swap' });
    assert.equal(again.status, 200);
    assert.equal(
      await exec(['/bin/sh', '-c', 'ls /var/lib/berth/ftp-roots/alice 2>&1 || true']).then((l) =>
        l.includes('swap'),
      ),
      false,
    );
    await running.asUser('alice', 'rm -f /home/alice/public_html/sub');
    const remade = await asHolder('alice', 'add_ftp_account', {
      login: 'swap',
      password: SWAP[1],
      directory: 'public_html/sub',
    });
    assert.equal(remade.status, 200, remade.body.info);
    const planted = await running.asUser(
      'alice',
      'cd /home/alice/public_html && rmdir sub && ln -s /home/bob/public_html/app sub && echo swapped',
    );
    assert.match(planted.stdout, /swapped/);
    assert.equal(neither().body.trim(), '');
    assert.equal(neither('/wp-config.php').ok, false);
    // bob's shell neither lists the pinned directories nor reaches alice's through them.
    const snoop = await running.asUser(
      'bob',
      'ls /var/lib/berth/ftp-roots /var/lib/berth/ftp-roots/alice 2>&1; echo end',
    );
    assert.doesNotMatch(snoop.stdout, /alice\n|swap|designer/);
    // No mount (a reboot, before Berth pins again): the login is in an empty directory of root's.
    await exec(['/usr/bin/umount', '--lazy', '/var/lib/berth/ftp-roots/alice/swap']);
    assert.equal(neither().body.trim(), '');
    assert.equal(ftps(...SWAP, '/x.txt', ['-T', local('x.txt', 'x\n')]).ok, false);
    assert.equal((await asHolder('alice', 'remove_ftp_account', { login: 'swap' })).status, 200);
  });

  it('an FTP session runs in alice’s control group; suspension ends it and refuses every login; unsuspension restores them', async () => {
    // An upload that waits for its data keeps the session open.
    const slow = new Promise<number | null>((resolve) => {
      const child = execFile(
        '/bin/sh',
        [
          '-c',
          `(sleep 20; echo late) | /usr/bin/curl -sS --max-time 60 --ssl-reqd --cacert "$1" --resolve "sandbox.test:$2:127.0.0.1" --user "$3" -T - "ftp://sandbox.test:$2/late.txt"`,
          'sh',
          sandbox.fallback_ca,
          String(sandbox.ftp_port),
          DESIGNER.join(':'),
        ],
        () => resolve(child.exitCode),
      );
    });
    let groups = '';
    for (let i = 0; i < 40 && !groups.includes('/alice'); i++) {
      await sleep(250);
      groups = await exec([
        '/bin/sh',
        '-c',
        'for p in $(pgrep -u alice pure-ftpd); do cat /proc/$p/cgroup; done',
      ]);
    }
    assert.match(groups, /^0::\/.*\/alice$/m, groups);
    assert.equal(
      (await sandboxCall(sandbox, 'suspendacct', { user: 'alice', reason: 'unpaid' })).status,
      200,
    );
    assert.equal(await exec(['/bin/sh', '-c', 'pgrep -u alice pure-ftpd || true']), '');
    assert.notEqual(await slow, 0);
    // The data it was waiting for never arrived.
    assert.equal(
      await exec(['/bin/sh', '-c', 'cat /home/alice/public_html/late.txt 2>/dev/null || true']),
      '',
    );
    assert.equal(ftps(...DESIGNER, '/').ok, false);
    assert.equal(ftps('alice', 'Alice-pass-1234', '/').ok, false);
    assert.equal((await sandboxCall(sandbox, 'unsuspendacct', { user: 'alice' })).status, 200);
    assert.ok(ftps(...DESIGNER, '/').ok);
    assert.ok(ftps('alice', 'Alice-pass-1234', '/').ok);
  });

  it('removal removes the FTP accounts: no login of alice’s works', async () => {
    assert.equal((await sandboxCall(sandbox, 'removeacct', { user: 'alice' })).status, 200);
    assert.equal(ftps(...DESIGNER, '/').ok, false);
    assert.equal(ftps('alice', 'Alice-pass-1234', '/').ok, false);
    assert.equal(await exec(['/bin/sh', '-c', 'grep -c alice /etc/pure-ftpd/berth.passwd || true']), '0');
    // Its pins went with it.
    assert.doesNotMatch(await exec(['/bin/cat', '/proc/self/mountinfo']), /ftp-roots\/alice/);
    assert.equal(
      await exec(['/bin/sh', '-c', 'ls /var/lib/berth/ftp-roots/alice 2>&1 || true']).then((l) =>
        l.includes('No such file'),
      ),
      true,
    );
    assert.ok(ftps('bob', 'Bob-pass-1234', '/').ok);
  });
});
