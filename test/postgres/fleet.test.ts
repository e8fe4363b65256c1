// Three linux-driver servers, each in its own system root, on one PostgreSQL store (CONTRACT §12):
// a call may arrive at any of them and what it changes on a system happens on the account's own
// server; placement spreads new accounts by weight and skips drained servers; a server that is
// down answers 503 node_unavailable with nothing changed anywhere; an answer lost between two
// servers leaves nothing done, and the retry with the same Idempotency-Key acts once.
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { verifySha512Crypt } from '../../src/auth/sha512-crypt.js';
import { findSystemUser, shadowPassword } from '../../src/provision/linux/passwd.ts';
import { postgresForTest, tempDir } from '../helpers.ts';
import { berth, type HttpsReply, post, type Served, serve } from '../process.ts';
import { makeSystemRoot } from '../provision/system-root.ts';

const CREDS = 'apiuser=fleet&apiauth=fleet-password-1';
const NAMES = ['a', 'b', 'c'] as const;
const A = 0;
const B = 1;
const C = 2;

/**
 * A TLS front for a server, with that server's own certificate (so the others' pin holds), that
 * can lose the answer to a fleet request after the server has acted on it, or not pass a request
 * on at all: what a network failure between two servers does.
 */
class LossyFront {
  server: Server;
  target = 0;
  /** Paths whose next answer is lost after the server made it. */
  loseAnswer = new Set<string>();
  /** Paths not passed on at all while listed. */
  block = new Set<string>();
  seen: string[] = [];

  constructor(dataDir: string) {
    this.server = createServer({
      key: readFileSync(join(dataDir, 'tls', 'key.pem')),
      cert: readFileSync(join(dataDir, 'tls', 'cert.pem')),
    });
    this.server.on('request', (incoming, outgoing) => {
      const path = incoming.url ?? '';
      this.seen.push(path);
      if (this.block.has(path)) {
        incoming.socket.destroy();
        return;
      }
      const forward = request(
        {
          host: '127.0.0.1',
          port: this.target,
          path,
          method: incoming.method,
          headers: incoming.headers,
          rejectUnauthorized: false,
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('end', () => {
            if (this.loseAnswer.delete(path)) {
              incoming.socket.destroy();
              return;
            }
            outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
            outgoing.end(Buffer.concat(chunks));
          });
        },
      );
      forward.on('error', () => incoming.socket.destroy());
      incoming.pipe(forward);
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return (this.server.address() as AddressInfo).port;
  }
}

describe('a fleet of three linux-driver servers on one PostgreSQL store', () => {
  const dirs = NAMES.map((name) => tempDir(`berth-fleet-${name}-`));
  const roots = NAMES.map(() => makeSystemRoot());
  let database: Awaited<ReturnType<typeof postgresForTest>>;
  let store: pg.Client;
  const nodes: Served[] = [];
  let front: LossyFront;
  let frontPort = 0;

  const start = async (i: number) => {
    const advertise = i === C ? ['--advertise', `https://127.0.0.1:${frontPort}`] : [];
    nodes[i] = await serve(dirs[i]!, [
      '--database',
      database.url,
      '--driver',
      'linux',
      '--system-root',
      roots[i]!,
      ...advertise,
    ]);
    if (i === C && front) front.target = nodes[C]!.adminPort;
  };
  const call = (node: number, op: string, params: string, headers: Record<string, string> = {}) =>
    post(dirs[node]!, nodes[node]!.adminPort, `/api/v1/${op}/`, {
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: `${CREDS}&${params}`,
    });
  const ok = async (reply: Promise<HttpsReply>) => {
    const answer = await reply;
    assert.equal(answer.status, 200, answer.body);
    return answer.json().data as Record<string, unknown>;
  };
  const create = (node: number, user: string, extra = '') =>
    call(
      node,
      'createacct',
      `user=${user}&domain=${user}-fleet.example&email=${user}%40example.org&package=default${extra}`,
    );
  const cli = (args: string[], input = '') =>
    berth([...args, '--data-dir', dirs[A]!, '--database', database.url], input);
  const doctor = (i: number) =>
    berth([
      'doctor',
      '--driver',
      'linux',
      '--system-root',
      roots[i]!,
      '--data-dir',
      dirs[i]!,
      '--database',
      database.url,
    ]);
  const home = (i: number, user: string) => join(roots[i]!, 'home', user);
  const onlyOn = (i: number, user: string) =>
    NAMES.map((_, j) => existsSync(home(j, user))).every((present, j) => present === (j === i));
  /** The files of a server's /etc that name `text` (a site, a zone, a key, a mail login). */
  const mentioning = (i: number, text: string) =>
    readdirSync(join(roots[i]!, 'etc'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && !entry.name.endsWith('-')) // not the shadow tools' backups
      .map((entry) => join(entry.parentPath, entry.name))
      .filter((file) => file.includes(text) || readFileSync(file, 'latin1').includes(text));
  const suspended = (i: number, user: string) => /^!/.test(shadowPassword(roots[i]!, user) ?? '');
  const serverOf = async (user: string) =>
    (await store.query('select server from accounts where "user" = $1', [user])).rows[0]?.server as
      | string
      | undefined;

  before(async () => {
    database = await postgresForTest();
    store = new pg.Client({ connectionString: database.url });
    NAMES.forEach((name, i) => {
      writeFileSync(
        join(dirs[i]!, 'berth.toml'),
        [
          `node_name = "${name}"`,
          // The default address the others reach a server at is https://<host_name>:<admin port>.
          'host_name = "localhost"',
          `shared_ipv4 = "192.0.2.${i + 1}"`,
          'shared_ipv6 = ""',
          `node_weight = ${i === C ? 2 : 1}`,
          '[linux]',
          `http_port = ${19600 + i + 3 * (process.pid % 150)}`,
          // Events are recorded when something subscribes to them.
          '[[webhooks]]',
          'url = "http://127.0.0.1:9/fleet-events"',
          'secret = "fleet-webhook-secret-0123456789abcdef"',
          'events = ["account.suspended"]',
          '',
        ].join('\n'),
      );
    });
    // c is reached through a front that can lose answers; it needs c's certificate, made at c's
    // first start, so c starts once before the front exists.
    await start(A);
    await start(B);
    frontPort = 1; // c's first start advertises nothing reachable; it is restarted behind the front
    await start(C);
    await nodes[C]!.stop();
    front = new LossyFront(dirs[C]!);
    frontPort = await front.listen();
    await start(C);
    await store.connect();
    const created = await cli(['api-user', 'create', 'fleet', '--password-stdin'], 'fleet-password-1\n');
    assert.equal(created.code, 0, created.stderr);
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node?.stop()));
    front?.server.close();
    await store?.end();
    await database?.release();
    for (const dir of [...dirs, ...roots]) rmSync(dir, { recursive: true, force: true });
  });

  it('lists the three servers as up, each with its address, driver and weight', async () => {
    const listed = await cli(['nodes', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    const servers = JSON.parse(listed.stdout) as {
      name: string;
      state: string;
      driver: string;
      weight: number;
      advertiseUrl: string;
    }[];
    assert.deepEqual(
      servers.map((s) => [s.name, s.state, s.driver, s.weight]),
      [
        ['a', 'up', 'linux', 1],
        ['b', 'up', 'linux', 1],
        ['c', 'up', 'linux', 2],
      ],
    );
    assert.equal(servers[A]!.advertiseUrl, `https://localhost:${nodes[A]!.adminPort}`);
    assert.equal(servers[C]!.advertiseUrl, `https://127.0.0.1:${frontPort}`);
    assert.match((await cli(['nodes'])).stdout, /^NAME +ADDRESS +DRIVER +STATE +WEIGHT +ACCOUNTS/m);
  });

  it('creates through a an account placed on b: its files are only under b, its record names b', async () => {
    const data = await ok(create(A, 'alice', '&server=b&password=Alice-pass-1'));
    assert.equal(data.server, 'b');
    assert.deepEqual(data.dedicatedip, { ipv4: '192.0.2.2', ipv6: '', status: 'off', status6: 'off' });
    assert.ok(onlyOn(B, 'alice'));
    assert.ok(findSystemUser(roots[B]!, 'alice'));
    assert.equal(findSystemUser(roots[A]!, 'alice'), undefined);
    assert.equal(verifySha512Crypt('Alice-pass-1', shadowPassword(roots[B]!, 'alice')!), true);
    // The record reads the same from every server.
    for (const i of [A, B, C]) {
      const summary = await ok(call(i, 'accountsummary', 'user=alice'));
      assert.equal((summary.acct as { server: string }).server, 'b');
    }
  });

  it('suspends, changes the password and the package of, and removes through a the account on b', async () => {
    await ok(call(A, 'suspendacct', 'user=alice&reason=Unpaid'));
    assert.ok(suspended(B, 'alice'));
    await ok(call(C, 'unsuspendacct', 'user=alice'));
    assert.ok(!suspended(B, 'alice'));
    await ok(call(A, 'passwd', 'user=alice&password=Alice-pass-2'));
    assert.equal(verifySha512Crypt('Alice-pass-2', shadowPassword(roots[B]!, 'alice')!), true);
    await ok(call(A, 'addpkg', 'name=withshell&shell=on'));
    await ok(call(A, 'changepackage', 'user=alice&package=withshell'));
    assert.notEqual(findSystemUser(roots[B]!, 'alice')?.shell, '/usr/sbin/nologin');
    const clean = await doctor(B);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    await ok(call(A, 'removeacct', 'user=alice'));
    assert.ok(NAMES.every((_, i) => !existsSync(home(i, 'alice'))));
    assert.equal(findSystemUser(roots[B]!, 'alice'), undefined);
  });

  it('removes through b an account made on a, leaving nothing on a', async () => {
    assert.equal((await ok(create(A, 'oscar', '&server=a'))).server, 'a');
    assert.ok(onlyOn(A, 'oscar'));
    await ok(call(B, 'removeacct', 'user=oscar'));
    assert.ok(NAMES.every((_, i) => !existsSync(home(i, 'oscar'))));
    assert.equal(findSystemUser(roots[A]!, 'oscar'), undefined);
    assert.deepEqual(mentioning(A, 'oscar'), []);
  });

  it('answers 503 node_unavailable while b is down, changing nothing, and makes the change once b is back', async () => {
    await ok(create(A, 'bob', '&server=b'));
    await nodes[B]!.stop();
    const refused = await call(A, 'suspendacct', 'user=bob&reason=Unpaid');
    assert.equal(refused.status, 503, refused.body);
    assert.equal((refused.json().data as { code: string }).code, 'node_unavailable');
    assert.equal(refused.headers['retry-after'], '30');
    assert.match(
      refused.json().info as string,
      /The account bob is on the server b, which could not be reached/,
    );
    const audit = await store.query(
      `select status, code from audit_log where operation = 'suspendacct' and target = 'bob' order by id`,
    );
    assert.deepEqual(audit.rows, [{ status: 503, code: 'node_unavailable' }]);
    const summary = await ok(call(C, 'accountsummary', 'user=bob'));
    assert.equal((summary.acct as { is_suspended: string }).is_suspended, 'no');
    assert.ok(!suspended(B, 'bob'));
    // createacct asked to place on b, now down, is refused as a parameter.
    const placed = await create(A, 'bobby', '&server=b');
    assert.equal(placed.status, 503, placed.body); // b's heartbeat is recent: it is still listed up
    assert.equal(await serverOf('bobby'), undefined);

    await start(B);
    await ok(call(A, 'suspendacct', 'user=bob&reason=Unpaid'));
    assert.ok(suspended(B, 'bob'));
    const clean = await doctor(B);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  });

  it('acts once when the answer between two servers is lost and the call is retried with its key', async () => {
    await ok(create(A, 'carol', '&server=c'));
    const key = { 'idempotency-key': 'fleet-lost-answer-1' };
    front.loseAnswer.add('/fleet/v1/steps');
    const lost = await call(A, 'suspendacct', 'user=carol&reason=Unpaid', key);
    assert.equal(lost.status, 503, lost.body);
    assert.equal((lost.json().data as { code: string }).code, 'node_unavailable');
    // c suspended, the answer never reached a: a rolled back and c undid its steps.
    assert.ok(!suspended(C, 'carol'));
    const retried = await call(B, 'suspendacct', 'user=carol&reason=Unpaid', key);
    assert.equal(retried.status, 200, retried.body);
    assert.ok(suspended(C, 'carol'));
    const again = await call(A, 'suspendacct', 'user=carol&reason=Unpaid', key);
    assert.equal(again.status, 200);
    assert.equal(again.body, retried.body);
    const events = await store.query(
      `select count(*)::int as n from events where type = 'account.suspended' and payload like '%"carol"%'`,
    );
    assert.equal(events.rows[0].n, 1);
    const audit = await store.query(
      `select status, code from audit_log where operation = 'suspendacct' and target = 'carol' order by id`,
    );
    assert.deepEqual(audit.rows, [
      { status: 503, code: 'node_unavailable' },
      { status: 200, code: null },
      { status: 200, code: 'replayed' },
    ]);
  });

  it('undoes steps whose settle message never came, once their transaction has rolled back', async () => {
    front.loseAnswer.add('/fleet/v1/steps');
    front.block.add('/fleet/v1/settle');
    const lost = await call(A, 'unsuspendacct', 'user=carol');
    assert.equal(lost.status, 503, lost.body);
    // c unsuspended, heard neither the answer's fate nor the undo: it finds out from the store.
    const until = Date.now() + 15_000;
    while (!suspended(C, 'carol') && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    assert.ok(suspended(C, 'carol'), 'c put the account back as the store has it');
    front.block.clear();
    const clean = await doctor(C);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    await ok(call(A, 'unsuspendacct', 'user=carol'));
    assert.ok(!suspended(C, 'carol'));
  });

  it('sends nothing to a server whose certificate is not the one it registered', async () => {
    const { rows } = await store.query(`select tls_fingerprint from servers where name = 'c'`);
    const forged = (rows[0].tls_fingerprint as string).replace(/^../, (pair) =>
      pair === 'AA' ? 'BB' : 'AA',
    );
    await store.query(`update servers set tls_fingerprint = $1 where name = 'c'`, [forged]);
    front.seen.length = 0;
    const refused = await call(A, 'suspendacct', 'user=carol&reason=Unpaid');
    assert.equal(refused.status, 503, refused.body);
    assert.deepEqual(front.seen, [], 'no request reached the front');
    assert.ok(!suspended(C, 'carol'));
    await store.query(`update servers set tls_fingerprint = $1 where name = 'c'`, [rows[0].tls_fingerprint]);
  });

  it('places new accounts on the up, non-draining server with the fewest accounts for its weight', async () => {
    await ok(call(A, 'removeacct', 'user=bob'));
    await ok(call(A, 'removeacct', 'user=carol'));
    assert.equal((await cli(['nodes', 'drain', 'b'])).code, 0);
    const drained = await create(A, 'dave', '&server=b');
    assert.equal(drained.status, 400);
    assert.match(drained.json().info as string, /the server b is draining/);
    const placed: string[] = [];
    for (const user of ['erin', 'frank', 'grace']) placed.push(String((await ok(create(B, user))).server));
    // a and c start empty; c weighs 2: a, c, c would be a, c then c (1/2 < 1/1) — ties go by name.
    assert.deepEqual(placed, ['a', 'c', 'c']);
    assert.equal((await cli(['nodes', 'undrain', 'b'])).code, 0);
    for (const user of ['heidi', 'ivan', 'judy', 'mallory'])
      placed.push(String((await ok(create(C, user))).server));
    assert.deepEqual(placed.slice(3), ['b', 'a', 'b', 'c']);
    for (const user of ['erin', 'frank', 'grace', 'heidi', 'ivan', 'judy', 'mallory']) {
      const server = await serverOf(user);
      assert.ok(onlyOn(NAMES.indexOf(server as 'a'), user), `${user} only on ${server}`);
    }
  });

  it('changes a package through one server for its accounts on all three', async () => {
    await ok(call(B, 'editpkg', 'name=default&shell=on'));
    for (const user of ['erin', 'frank', 'heidi']) {
      const i = NAMES.indexOf((await serverOf(user)) as 'a');
      assert.notEqual(findSystemUser(roots[i]!, user)?.shell, '/usr/sbin/nologin', user);
    }
    await ok(call(B, 'editpkg', 'name=default&shell=off'));
    for (const user of ['erin', 'frank', 'heidi']) {
      const i = NAMES.indexOf((await serverOf(user)) as 'a');
      assert.equal(findSystemUser(roots[i]!, user)?.shell, '/usr/sbin/nologin', user);
    }
  });

  it('moves an account to another server with its files, mail, password, certificate, DKIM key and added domains', async () => {
    await ok(create(A, 'peggy', '&server=b&password=Peggy-pass-1&shell=1'));
    const old = findSystemUser(roots[B]!, 'peggy')!;
    const own = (path: string) => lchownSync(path, old.uid, old.gid);
    // What the customer made: a page, a mail in its box, a key to log in with, and a link to a file
    // of root's, which must travel as a link and never as what it points to.
    const oldHome = home(B, 'peggy');
    writeFileSync(join(oldHome, 'public_html', 'index.php'), '<?php echo "peggy";\n');
    own(join(oldHome, 'public_html', 'index.php'));
    mkdirSync(join(oldHome, 'Maildir', 'new'));
    own(join(oldHome, 'Maildir', 'new'));
    writeFileSync(
      join(oldHome, 'Maildir', 'new', '1.eml'),
      'Subject: kept\n\nA mail from before the move.\n',
    );
    own(join(oldHome, 'Maildir', 'new', '1.eml'));
    writeFileSync(join(oldHome, '.ssh', 'authorized_keys'), 'ssh-ed25519 AAAA peggy\n');
    own(join(oldHome, '.ssh', 'authorized_keys'));
    // Its shell's home inside the jail (in a directory of root's): the jail itself is made anew.
    writeFileSync(join(oldHome, 'home', 'peggy', 'notes.txt'), 'notes\n');
    own(join(oldHome, 'home', 'peggy', 'notes.txt'));
    symlinkSync(join(roots[B]!, 'etc', 'shadow'), join(oldHome, 'public_html', 'shadow'));
    own(join(oldHome, 'public_html', 'shadow'));
    // Its certificate came from ACME: it goes along (a fallback one is made anew by the new server).
    const certDir = (i: number) => join(roots[i]!, 'etc/berth/certs/peggy-fleet.example');
    const state = JSON.parse(readFileSync(join(certDir(B), 'state.json'), 'utf8')) as { state: string };
    writeFileSync(join(certDir(B), 'state.json'), JSON.stringify({ ...state, state: 'valid' }));
    const certificate = readFileSync(join(certDir(B), 'certificate.pem'), 'utf8');
    const dkimKey = (i: number) => join(roots[i]!, 'etc/berth/dkim/peggy-fleet.example.private');
    const key = readFileSync(dkimKey(B), 'utf8');
    // A domain its holder added (asked of a third server, done on the account's): it goes along.
    await ok(
      post(dirs[C]!, nodes[C]!.adminPort, '/api/account/add_domain/', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `${CREDS}&user=peggy&domain=peggy-shop.example&type=addon`,
      }),
    );
    const addonFiles = [
      'var/www/berth-sites/peggy-shop.example/root',
      'etc/bind/zones/peggy-shop.example.db',
      'etc/berth/certs/peggy-shop.example/certificate.pem',
      'etc/berth/mail/peggy-shop.example.json',
    ];
    for (const path of addonFiles) assert.ok(existsSync(join(roots[B]!, path)), path);
    // A document root through the link the customer planted is refused by the account's server,
    // and the caller answers 400 naming the parameter, with nothing made.
    const planted = await post(dirs[C]!, nodes[C]!.adminPort, '/api/account/add_domain/', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `${CREDS}&user=peggy&domain=peggy-evil.example&type=addon&docroot=public_html/shadow/site`,
    });
    assert.equal(planted.status, 400, planted.body);
    assert.deepEqual(planted.json().data, { code: 'invalid_parameter', param: 'docroot' });
    assert.deepEqual(mentioning(B, 'peggy-evil'), []);
    await ok(call(A, 'suspendacct', 'user=peggy&reason=Moving'));
    const hash = shadowPassword(roots[B]!, 'peggy');

    const moved = await cli(['move-account', 'peggy', '--to', 'a']);
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, /^Account peggy moved from b to a$/m);
    assert.equal(await serverOf('peggy'), 'a');
    assert.ok(onlyOn(A, 'peggy'));
    assert.equal(findSystemUser(roots[B]!, 'peggy'), undefined);
    assert.deepEqual(mentioning(B, 'peggy'), []);

    const now = findSystemUser(roots[A]!, 'peggy')!;
    const newHome = home(A, 'peggy');
    assert.equal(readFileSync(join(newHome, 'public_html', 'index.php'), 'utf8'), '<?php echo "peggy";\n');
    assert.equal(statSync(join(newHome, 'public_html', 'index.php')).uid, now.uid);
    assert.match(readFileSync(join(newHome, 'Maildir', 'new', '1.eml'), 'utf8'), /before the move/);
    assert.equal(readFileSync(join(newHome, '.ssh', 'authorized_keys'), 'utf8'), 'ssh-ed25519 AAAA peggy\n');
    assert.equal(readFileSync(join(newHome, 'home', 'peggy', 'notes.txt'), 'utf8'), 'notes\n');
    assert.equal(statSync(join(newHome, 'usr')).uid, 0, "the jail is root's, made by the new server");
    assert.ok(lstatSync(join(newHome, 'public_html', 'shadow')).isSymbolicLink());
    assert.equal(shadowPassword(roots[A]!, 'peggy'), hash);
    assert.equal(readFileSync(join(certDir(A), 'certificate.pem'), 'utf8'), certificate);
    assert.equal(readFileSync(dkimKey(A), 'utf8'), key);
    for (const path of addonFiles) assert.ok(existsSync(join(roots[A]!, path)), path);
    assert.ok(statSync(join(newHome, 'public_html', 'peggy-shop.example')).isDirectory());
    const summary = await ok(call(C, 'accountsummary', 'user=peggy'));
    const record = summary.acct as { server: string; is_suspended: string; dedicatedip: { ipv4: string } };
    assert.equal(record.server, 'a');
    assert.equal(record.is_suspended, 'yes');
    assert.equal(record.dedicatedip.ipv4, '192.0.2.1');

    // It works on its new server as before: unsuspended through b, its old password logs in.
    await ok(call(B, 'unsuspendacct', 'user=peggy'));
    assert.equal(verifySha512Crypt('Peggy-pass-1', shadowPassword(roots[A]!, 'peggy')!), true);
    const audit = await cli(['audit', '--json', '--limit', '5']);
    assert.ok(
      (JSON.parse(audit.stdout) as { operation: string; status: number }[]).some(
        (entry) => entry.operation === 'move-account' && entry.status === 200,
      ),
    );
    for (const i of [A, B]) {
      const result = await doctor(i);
      assert.equal(result.code, 0, `${NAMES[i]}: ${result.stdout}${result.stderr}`);
    }
  });

  it('leaves an account whole on its old server when its move fails part-way', async () => {
    await ok(create(A, 'trent', '&server=b'));
    const owner = findSystemUser(roots[B]!, 'trent')!;
    // A file the account itself cannot read: its files cannot all be copied, so nothing moves.
    const locked = join(home(B, 'trent'), 'public_html', 'locked.html');
    writeFileSync(locked, 'mine\n', { mode: 0o000 });
    lchownSync(locked, owner.uid, owner.gid);
    const failed = await cli(['move-account', 'trent', '--to', 'a']);
    assert.equal(failed.code, 1);
    assert.match(
      failed.stderr,
      /The system step "account files" failed; everything done for this call was undone/,
    );
    assert.equal(await serverOf('trent'), 'b');
    assert.ok(onlyOn(B, 'trent'));
    assert.equal(findSystemUser(roots[A]!, 'trent'), undefined);
    assert.deepEqual(mentioning(A, 'trent'), []);
    assert.equal(readFileSync(locked, 'utf8'), 'mine\n');

    // Refused before anything is done: a server that does not exist, the server it is on already.
    const ghost = await cli(['move-account', 'trent', '--to', 'ghost']);
    assert.equal(ghost.code, 1);
    assert.match(ghost.stderr, /there is no server named ghost/);
    const same = await cli(['move-account', 'trent', '--to', 'b']);
    assert.match(same.stderr, /trent is on b already/);
    const nobody = await cli(['move-account', 'nobody', '--to', 'a']);
    assert.match(nobody.stderr, /No account named nobody exists/);

    // Readable again, it moves.
    chmodSync(locked, 0o644);
    const moved = await cli(['move-account', 'trent', '--to', 'a']);
    assert.equal(moved.code, 0, moved.stderr);
    assert.ok(onlyOn(A, 'trent'));
    assert.equal(readFileSync(join(home(A, 'trent'), 'public_html', 'locked.html'), 'utf8'), 'mine\n');
  });

  it('has each server’s doctor check its own accounts only, and find no difference', async () => {
    for (const i of [A, B, C]) {
      const result = await doctor(i);
      assert.equal(result.code, 0, `${NAMES[i]}: ${result.stdout}${result.stderr}`);
    }
  });
});
