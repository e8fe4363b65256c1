// Root never follows a customer's link. A customer can replace anything in its home with a
// symbolic link to a file only root may touch; every operation that reaches into the home (and
// crash recovery) is run against links planted at every path it touches, and the link's target
// must come out exactly as it was: same owner, mode and content.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  chownSync,
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
import { join, relative } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { inspect, recoverInterruptedCalls, refreshUsage } from '../../src/operations/maintenance.ts';
import { findSystemUser } from '../../src/provision/linux/passwd.ts';
import { assertRefused, callCreateacct, createAccount, summary } from '../helpers.ts';
import { journalUnfinished, type LinuxHarness, linuxSetup } from './system-root.ts';

/** Owner, mode and content (its hash) of every file and directory below `dir`. */
function state(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (path: string) => {
    const stat = lstatSync(path);
    const key = relative(dir, path) || '.';
    const content = stat.isFile() ? createHash('sha256').update(readFileSync(path)).digest('hex') : '';
    out[key] = `${stat.uid}:${stat.gid}:${(stat.mode & 0o7777).toString(8)}:${content}`;
    if (stat.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return out;
}

describe('links a customer plants in its home', () => {
  let h: LinuxHarness;
  let target: string;
  let targetBefore: Record<string, string>;
  const home = (...parts: string[]) => join(h.root, 'home', 'mallory', ...parts);

  before(async () => {
    h = await linuxSetup();
    // What an attacker would aim at: a directory and files only root may touch.
    target = join(h.root, 'etc', 'sudoers.d');
    mkdirSync(target, { mode: 0o750 });
    writeFileSync(join(target, 'README'), 'root only\n', { mode: 0o440 });
    writeFileSync(join(target, 'big'), 'x'.repeat(4 * 1024 * 1024), { mode: 0o440 });
    targetBefore = state(target);
    const reply = await callCreateacct(h, 'mallory', {
      domain: 'mallory.example',
      email: 'm@example.org',
      password: 'Mallory-pass-1',
    });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
  });
  after(() => h.close());

  /** What the customer does: public_html becomes a link to the target, and a link sits in it. */
  beforeEach(() => {
    const mallory = findSystemUser(h.root, 'mallory');
    if (!mallory) return; // removed by an earlier test
    const { uid, gid } = mallory;
    rmSync(home('public_html'), { recursive: true, force: true });
    rmSync(home('site'), { recursive: true, force: true });
    symlinkSync(target, home('public_html'));
    mkdirSync(home('site'));
    symlinkSync(target, home('site', 'escape'));
    symlinkSync(join(target, 'README'), home('site', 'readme'));
    for (const path of [home('public_html'), home('site'), home('site', 'escape'), home('site', 'readme')])
      lchownSync(path, uid, gid);
  });

  const untouched = () => assert.deepEqual(state(target), targetBefore);

  it('crash recovery repairs the account without following public_html', async () => {
    const entry = { user: 'mallory', domain: 'mallory.example', homedir: '/home/mallory' };
    h.services.journal.begin({ ...entry, operation: 'suspendacct', startedAt: new Date().toISOString() });
    const done = await recoverInterruptedCalls(h.services);
    assert.equal(done.length, 1);
    untouched();
    assert.ok(lstatSync(home('public_html')).isSymbolicLink(), "the customer's link is left as it was");
  });

  for (const [op, params] of [
    ['suspendacct', { reason: 'test' }],
    ['unsuspendacct', {}],
    ['passwd', { password: 'Mallory-pass-2' }],
    ['editquota', { quota: '100' }],
    ['changepackage', { package: 'default' }],
  ] as const) {
    it(`${op} leaves the link's target alone`, async () => {
      const reply = await h.call(op, { user: 'mallory', ...params });
      assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
      untouched();
    });
  }

  it('a shell jail is not built in a home the customer could write, nor over its link', async () => {
    assert.equal((await h.call('addpkg', { name: 'jailed', shell: 'on' })).statusCode, 200);
    const { uid, gid } = findSystemUser(h.root, 'mallory')!;
    // A home as an older layout left it (the customer's, who could plant a link at any moment):
    // nothing is made in it by plain paths.
    chownSync(home(), uid, gid);
    let reply = await h.call('changepackage', { user: 'mallory', package: 'jailed' });
    assert.equal(reply.statusCode, 500, JSON.stringify(reply.body));
    chownSync(home(), 0, gid);
    symlinkSync(target, home('usr'));
    lchownSync(home('usr'), uid, gid);
    try {
      // A root-owned home with the customer's link where the jail's usr goes: refused, not followed.
      reply = await h.call('changepackage', { user: 'mallory', package: 'jailed' });
      assert.equal(reply.statusCode, 500, JSON.stringify(reply.body));
      untouched();
    } finally {
      rmSync(home('usr'));
    }
    // Without the link, the jail is made: hard links of the template, root's.
    reply = await h.call('changepackage', { user: 'mallory', package: 'jailed' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    assert.equal(lstatSync(home('usr', 'bin', 'true')).nlink, 2);
    assert.match(
      readFileSync(home('etc', 'passwd'), 'utf8'),
      /^mallory:x:\d+:\d+::\/home\/mallory:\/bin\/bash$/m,
    );
    assert.equal((await h.call('changepackage', { user: 'mallory', package: 'default' })).statusCode, 200);
    assert.throws(() => lstatSync(home('usr')), /ENOENT/, 'the jail goes with shell off');
    untouched();
  });

  it('usage refresh counts the home without following links', async () => {
    await refreshUsage(h.services);
    untouched();
    assert.ok(Number((await summary(h, 'mallory')).quota_usage) < 4, 'the 4 MB behind the link were counted');
  });

  it('doctor reports the link instead of following it', async () => {
    const differences = await inspect(h.services);
    assert.ok(
      differences.includes('mallory: /home/mallory/public_html is a symbolic link (not followed)'),
      differences.join('\n'),
    );
    untouched();
  });

  it('removeacct removes the links, never what they point at', async () => {
    const reply = await h.call('removeacct', { user: 'mallory' });
    assert.equal(reply.statusCode, 200, JSON.stringify(reply.body));
    untouched();
    assert.throws(() => lstatSync(home()), /ENOENT/);
  });

  it('recovery of an unfinished createacct removes its home without following links', async () => {
    await createAccount(h, 'ghost');
    const ghostHome = join(h.root, 'home', 'ghost');
    rmSync(join(ghostHome, 'public_html'), { recursive: true });
    symlinkSync(target, join(ghostHome, 'public_html'));
    // As if the process had died before the commit: the store never got the account.
    await h.services.store.db.deleteFrom('accounts').where('user', '=', 'ghost').execute();
    journalUnfinished(h, 'ghost', 'system user');
    await recoverInterruptedCalls(h.services);
    untouched();
    assert.throws(() => lstatSync(ghostHome), /ENOENT/);
    assert.equal(findSystemUser(h.root, 'ghost'), undefined);
  });

  it('createacct over a home that is already a link fails without touching its target', async () => {
    symlinkSync(target, join(h.root, 'home', 'trudy'));
    const reply = await callCreateacct(h, 'trudy', { domain: 'trudy.example', email: 't@example.org' });
    assertRefused(reply, 500, 'provisioning_failed', undefined);
    untouched();
    assert.equal(findSystemUser(h.root, 'trudy'), undefined);
    assert.equal(statSync(target).uid, 0);
  });
});

describe('the linux driver touches customer paths in one place', () => {
  it('no file but home.ts (customer paths) and files.ts (system paths) changes files', () => {
    const dir = join(import.meta.dirname, '../../src/provision/linux');
    const readOnly = new Set([
      'existsSync',
      'lstatSync',
      'statfsSync',
      'readdirSync',
      'readFileSync',
      'readlinkSync',
      'createReadStream',
      'closeSync',
    ]);
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter(
      (name) => name.endsWith('.ts') || name.endsWith('.js'),
    );
    assert.ok(files.includes('web/component.ts'), 'the components are looked at too');
    for (const file of files) {
      // cgroups.ts writes the kernel's control-group files alone, which no account can write.
      // home-walk.js and home-remove.js are home.ts's walks in worker threads, under its rules.
      // php/etc-view.ts copies the system's /etc, root's, into views in a directory root's alone.
      // user/database.ts replaces the user database in /etc, root's alone, as the shadow tools do.
      const apart = [
        'home.ts',
        'home-walk.js',
        'home-remove.js',
        'files.ts',
        'cgroups.ts',
        'php/etc-view.ts',
        'user/database.ts',
      ];
      if (apart.includes(file)) continue;
      const source = readFileSync(join(dir, file), 'utf8');
      for (const match of source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'node:fs(?:\/promises)?'/g)) {
        const names = match[1]!
          .split(',')
          .map((name) => name.trim())
          .filter(Boolean);
        assert.deepEqual(
          names.filter((name) => !readOnly.has(name)),
          [],
          `${file} imports ${names.join(', ')}`,
        );
      }
      assert.ok(
        !/from\s*'(?:fs|node:fs\/promises|fs\/promises)'/.test(source),
        `${file} imports fs another way`,
      );
    }
  });
});
