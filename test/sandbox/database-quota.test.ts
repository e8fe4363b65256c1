// An account's databases inside its disk quota, in `berth sandbox` (homes on btrfs, a qgroup per
// account): each database's files are in the account's own subvolume beside the homes, linked from
// MariaDB's data directory, so that INSERTs past a 10 MB quota are refused by the filesystem while
// the account next door and the server go on; the account's usage counts its databases and not its
// neighbour's. The neighbour can neither list nor enter the databases' directory, nor put anything
// in it; dropping a database gives the room back; doctor names a database's link that leads
// elsewhere, a database outside the quota, a subvolume outside the account's qgroup; removal leaves
// neither the subvolume nor a link. A table's DATA DIRECTORY, which would put its files in the
// neighbour's quota or in /tmp, is ignored (MariaDB's symbolic links off).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { SandboxInfo } from '../../src/sandbox/sandbox.ts';
import { tempDir } from '../helpers.ts';
import {
  BERTH,
  curl,
  type RunningSandbox,
  sandboxCall,
  sandboxHolderCall,
  startSandbox,
} from '../process.ts';

const MiB = 1024 * 1024;
const SECRET = 'Db-Quota-9876';
const STORE = '/home/.berth-databases';
const DATADIR = '/var/lib/mysql';
const passwordOf = (user: string) => `Pass-${user}-1234`;

/** A PHP page of the neighbour's that tries the databases' directory every way PHP has. */
const PROBE_PHP = `<?php
$out = [];
foreach (['${STORE}', '${STORE}/tara', '${STORE}/tara/tara_big'] as $dir) {
  $out[$dir] = ['list' => @scandir($dir) !== false, 'read' => @file_get_contents("$dir/t.ibd") !== false];
}
$out['shell'] = function_exists('shell_exec') ? @shell_exec('ls ${STORE}/tara 2>&1') : null;
echo json_encode($out);
`;

describe("databases in their account's disk quota, in the sandbox", () => {
  const dataDir = tempDir('berth-sandbox-dbquota-');
  let running: RunningSandbox;
  let sandbox: SandboxInfo;

  const call = async (operation: string, params: Record<string, string>) => {
    const reply = await sandboxCall(sandbox, operation, params);
    assert.equal(reply.status, 200, `${operation}: ${reply.info}`);
    return reply;
  };
  const asHolder = async (user: string, operation: string, params: Record<string, string>) => {
    const reply = await sandboxHolderCall(sandbox, { user, password: passwordOf(user) }, operation, params);
    assert.equal(reply.status, 200, `${operation}: ${reply.body.info}`);
  };
  /** The MariaDB client as the account's system user, logged in as its database user. */
  const client = (account: string, sql: string) =>
    running.asUser(
      account,
      `MYSQL_PWD='${SECRET}' /usr/bin/mariadb --batch --skip-column-names -u ${account}_db -e "${sql}"`,
    );
  const asRoot = async (args: string[]) => {
    const done = await running.exec(args);
    assert.equal(done.code, 0, `${args.join(' ')}: ${done.stderr}`);
    return done.stdout;
  };
  const sync = () => asRoot(['/usr/bin/btrfs', 'filesystem', 'sync', '/home']);
  /** The account's qgroup's exclusive bytes, and the qgroups each subvolume is in, by path. */
  const qgroups = async () => {
    const shown = await asRoot(['/usr/bin/btrfs', 'qgroup', 'show', '-pre', '--raw', '/home']);
    return shown
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter(([id]) => /^\d+\/\d+$/.test(id ?? ''));
  };
  const gidOf = async (user: string) => (await asRoot(['/usr/bin/id', '-g', user])).trim();
  const usageOf = async (user: string) => {
    await asRoot([process.execPath, BERTH, 'usage', 'refresh', '--data-dir', '/var/lib/berth']);
    const info = await sandboxHolderCall(sandbox, { user, password: passwordOf(user) }, 'account_info');
    assert.equal(info.status, 200, info.body.info);
    return Number((info.body.data as { quota_usage: string | number }).quota_usage);
  };
  /** Inserts about a MiB at a time, up to `mb` times, until MariaDB refuses: the error, the MiB in. */
  const fill = async (account: string, database: string, mb: number) => {
    for (let i = 0; i < mb; i++) {
      const done = await client(
        account,
        `INSERT INTO ${database}.t (b) SELECT RANDOM_BYTES(1024) FROM ${database}.seq_1_to_1024`,
      );
      if (done.code !== 0) return { refused: done.stderr, mb: i };
    }
    return { refused: '', mb };
  };
  const doctor = async () =>
    (await running.exec([process.execPath, BERTH, 'doctor', '--data-dir', '/var/lib/berth'])).stdout;

  before(async () => {
    running = await startSandbox(dataDir);
    sandbox = running.info;
    await call('addpkg', { name: 'tiny', quota: '10' });
    await call('addpkg', { name: 'roomy', quota: '100' });
    for (const [user, plan] of [
      ['tara', 'tiny'],
      ['uwe', 'roomy'],
    ] as const) {
      await call('createacct', {
        user,
        domain: `${user}.example`,
        email: `${user}@example.org`,
        package: plan,
        password: passwordOf(user),
        sql: 'unlimited',
      });
      for (const [op, params] of [
        ['add_database', { name: 'big' }],
        ['add_database_user', { name: 'db', password: SECRET }],
        ['grant_database', { database: 'big', dbuser: 'db' }],
      ] as const)
        await asHolder(user, op, params);
      const made = await client(
        user,
        `CREATE TABLE ${user}_big.t (id INT AUTO_INCREMENT PRIMARY KEY, b BLOB) ENGINE=InnoDB`,
      );
      assert.equal(made.code, 0, made.stderr);
    }
  });
  after(async () => {
    if (running?.child.exitCode === null) await running.stop();
  });

  it("keeps each database in the account's subvolume, in its qgroup, linked from MariaDB's data directory", async () => {
    assert.equal(
      (await asRoot(['/usr/bin/readlink', `${DATADIR}/tara_big`])).trim(),
      `${STORE}/tara/tara_big`,
    );
    assert.equal((await asRoot(['/usr/bin/stat', '-c', '%U %a', STORE])).trim(), 'root 711');
    for (const path of [`${STORE}/tara`, `${STORE}/tara/tara_big`])
      assert.equal((await asRoot(['/usr/bin/stat', '-c', '%U %a', path])).trim(), 'mysql 700');
    assert.match(await asRoot(['/usr/bin/ls', `${STORE}/tara/tara_big`]), /^t\.ibd$/m);
    const group = `1/${await gidOf('tara')}`;
    const own = (await qgroups()).find((row) => row.at(-1) === '.berth-databases/tara');
    assert.ok(own, 'the databases of tara have a subvolume of their own');
    assert.ok(own.includes(group), `the subvolume is in ${group}: ${own.join(' ')}`);
    const charset = await client(
      'tara',
      "SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'tara_big'",
    );
    assert.equal(charset.stdout, 'utf8mb4_unicode_ci\n');
  });

  it('refuses INSERTs past a 10 MB quota, while the neighbour and the server go on', async () => {
    const filled = await fill('tara', 'tara_big', 20);
    assert.match(filled.refused, /is full|errno: (28|122)|quota/i, `refused with: ${filled.refused}`);
    await sync();
    const id = `1/${await gidOf('tara')}`;
    const group = (await qgroups()).find((row) => row[0] === id);
    const table = Number(await asRoot(['/usr/bin/stat', '-c', '%s', `${STORE}/tara/tara_big/t.ibd`]));
    // InnoDB grows a table's file by whole extents ahead of its rows: the file, not the rows, is
    // what the quota holds, and the next extent is what it refused.
    const held = Number(group?.[2]);
    assert.ok(held >= 5 * MiB && held <= 10 * MiB, `tara holds ${held} bytes of a 10 MB quota`);
    assert.ok(table >= 4 * MiB, `the table's file is ${table} bytes`);
    // The same quota holds the home: nothing more fits there either.
    const wrote = await running.asUser('tara', 'dd if=/dev/zero of=/home/tara/public_html/x bs=1M count=5');
    assert.notEqual(wrote.code, 0, 'a write in the home past the quota the database took');
    assert.match(wrote.stderr, /quota/i);
    // uwe's database, in the same MariaDB, takes rows; the server answers root.
    assert.deepEqual(await fill('uwe', 'uwe_big', 2), { refused: '', mb: 2 });
    assert.equal(
      await asRoot(['/usr/bin/mariadb', '--batch', '--skip-column-names', '-e', 'SELECT 1']),
      '1\n',
    );
    assert.equal((await client('tara', 'SELECT COUNT(*) > 0 FROM tara_big.t')).stdout, '1\n');
  });

  it("counts the account's databases in its usage, and not the neighbour's", async () => {
    // InnoDB writes a row's page to the table's file some time after the INSERT: FOR EXPORT now.
    await asRoot(['/usr/bin/mariadb', '-e', 'FLUSH TABLES tara_big.t, uwe_big.t FOR EXPORT; UNLOCK TABLES']);
    await sync();
    const tara = await usageOf('tara');
    const uwe = await usageOf('uwe');
    // Each holds a table's file of about 9 MB: counted in the neighbour's usage, tara's would be twice.
    assert.ok(tara >= 5 && tara <= 11, `tara uses ${tara} MB with about 10 MB of database`);
    assert.ok(uwe >= 2 && uwe <= 20, `uwe uses ${uwe} MB with 2 MB of rows`);
  });

  it('keeps the neighbour out of the databases\u2019 directory: no listing, no entry, nothing planted', async () => {
    for (const script of [
      `ls ${STORE}`,
      `ls ${STORE}/tara`,
      `cat ${STORE}/tara/tara_big/t.ibd`,
      `touch ${STORE}/uwe_x`,
      `ln -s /home/uwe ${STORE}/tara2`,
      `ln -s /home/uwe ${DATADIR}/tara_new`,
    ]) {
      const tried = await running.asUser('uwe', script);
      assert.notEqual(tried.code, 0, `uwe: ${script}`);
    }
    const page = await running.exec([
      '/usr/sbin/runuser',
      '-u',
      'uwe',
      '--',
      '/usr/bin/php',
      '-r',
      'file_put_contents($argv[1], base64_decode($argv[2]));',
      '/home/uwe/public_html/probe.php',
      Buffer.from(PROBE_PHP).toString('base64'),
    ]);
    assert.equal(page.code, 0, page.stderr);
    const reply = curl([
      '-k',
      '--resolve',
      `uwe.example:${sandbox.https_port}:127.0.0.1`,
      `https://uwe.example:${sandbox.https_port}/probe.php`,
    ]);
    assert.equal(reply.status, 200, reply.body);
    const seen = JSON.parse(reply.body) as Record<string, { list: boolean; read: boolean } | string | null>;
    for (const dir of [STORE, `${STORE}/tara`, `${STORE}/tara/tara_big`])
      assert.deepEqual(seen[dir], { list: false, read: false }, dir);
    assert.doesNotMatch(String(seen.shell ?? ''), /tara_big/);
  });

  it("puts no table's files outside its database's directory: DATA DIRECTORY is ignored", async () => {
    // Into the neighbour's databases (his quota, not hers) and into /tmp (no quota at all).
    for (const [engine, dir] of [
      ['InnoDB', `${STORE}/tara/tara_big`],
      ['MyISAM', `${STORE}/tara/tara_big`],
      ['Aria', '/tmp'],
    ] as const) {
      const made = await client(
        'uwe',
        `CREATE TABLE uwe_big.away_${engine} (a INT) ENGINE=${engine} DATA DIRECTORY='${dir}' INDEX DIRECTORY='${dir}'`,
      );
      // InnoDB refuses INDEX DIRECTORY; the others make the table where it belongs.
      if (engine !== 'InnoDB') assert.equal(made.code, 0, made.stderr);
    }
    const here = await asRoot(['/usr/bin/ls', `${STORE}/uwe/uwe_big`]);
    assert.match(here, /^away_MyISAM\.MYD$/m);
    assert.match(here, /^away_Aria\.MAD$/m);
    assert.doesNotMatch(await asRoot(['/usr/bin/ls', '-A', `${STORE}/tara/tara_big`, '/tmp']), /away/);
    assert.equal((await asRoot(['/usr/bin/find', `${STORE}/uwe/uwe_big`, '-type', 'l'])).trim(), '');
    assert.doesNotMatch(await doctor(), /symbolic links/);
  });

  it('gives the room back when the database is removed, its directory and link gone', async () => {
    await asHolder('tara', 'remove_database', { name: 'big' });
    assert.notEqual((await running.exec(['/usr/bin/test', '-e', `${DATADIR}/tara_big`])).code, 0);
    assert.notEqual((await running.exec(['/usr/bin/test', '-L', `${DATADIR}/tara_big`])).code, 0);
    assert.notEqual((await running.exec(['/usr/bin/test', '-e', `${STORE}/tara/tara_big`])).code, 0);
    await sync();
    const wrote = await running.asUser('tara', 'dd if=/dev/zero of=/home/tara/public_html/x bs=1M count=5');
    assert.equal(wrote.code, 0, wrote.stderr);
  });

  it("doctor names a database's link that leads elsewhere", async () => {
    await asHolder('tara', 'add_database', { name: 'two' });
    assert.doesNotMatch(await doctor(), /tara: .*(outside the|leads to)/);
    await asRoot(['/usr/bin/ln', '-sfn', '/var/lib/mysql/mysql', `${DATADIR}/tara_two`]);
    assert.match(
      await doctor(),
      /tara: database tara_two's link in \/var\/lib\/mysql leads to \/var\/lib\/mysql\/mysql/,
    );
    await asRoot(['/usr/bin/ln', '-sfn', `${STORE}/tara/tara_two`, `${DATADIR}/tara_two`]);
    assert.doesNotMatch(await doctor(), /tara: .*(outside the|leads to)/);
  });

  it('doctor names a database in the data directory itself, and a subvolume outside the qgroup', async () => {
    // As a database made before Berth kept databases in the quota: a directory of the data directory.
    await asHolder('uwe', 'add_database', { name: 'old' });
    await asRoot(['/usr/bin/mariadb', '-e', 'DROP DATABASE uwe_old; CREATE DATABASE uwe_old']);
    const id = (await asRoot(['/usr/bin/btrfs', 'inspect-internal', 'rootid', `${STORE}/uwe`])).trim();
    const group = `1/${await gidOf('uwe')}`;
    await asRoot(['/usr/bin/btrfs', 'qgroup', 'remove', `0/${id}`, group, '/home']);
    const said = await doctor();
    assert.match(
      said,
      /^uwe: database uwe_old is in \/var\/lib\/mysql itself, outside the account's disk quota$/m,
    );
    assert.match(
      said,
      new RegExp(
        `^uwe: the databases' subvolume ${STORE}/uwe is not in qgroup ${group}: outside the disk quota$`,
        'm',
      ),
    );
    await asRoot(['/usr/bin/btrfs', 'qgroup', 'assign', `0/${id}`, group, '/home']);
    await asHolder('uwe', 'remove_database', { name: 'old' });
    assert.doesNotMatch(await doctor(), /uwe: .*(outside the|leads to)/);
  });

  it('removal leaves neither the subvolume nor a link of the account', async () => {
    await call('removeacct', { user: 'tara' });
    assert.notEqual((await running.exec(['/usr/bin/test', '-e', `${STORE}/tara`])).code, 0);
    assert.doesNotMatch(await asRoot(['/usr/bin/ls', '-A', DATADIR]), /^tara_/m);
    assert.ok(!(await qgroups()).some((row) => row.at(-1) === '.berth-databases/tara'));
    assert.equal((await client('uwe', 'SELECT COUNT(*) > 0 FROM uwe_big.t')).stdout, '1\n');
    // What a removal cut short would leave, doctor names.
    assert.doesNotMatch(await doctor(), /databases' directory of no account/);
    await asRoot(['/usr/bin/mkdir', `${STORE}/ghost`]);
    assert.match(
      await doctor(),
      new RegExp(`^${STORE}/ghost: the databases' directory of no account here`, 'm'),
    );
    await asRoot(['/usr/bin/rmdir', `${STORE}/ghost`]);
  });
});
