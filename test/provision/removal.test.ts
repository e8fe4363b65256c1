// Removing a customer's tree (home.ts's removeHome, removeTree, removeOwnedBy) in a throwaway
// directory: however deep the tree or large a directory, it goes whole, in a thread of its own,
// while the server's event loop keeps turning; links in it are removed, never followed.
import assert from 'node:assert/strict';
import {
  closeSync,
  constants,
  lchownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { removeHome, removeOwnedBy, removeTree, UnsafePath } from '../../src/provision/linux/home.ts';
import { tempDir } from '../helpers.ts';

const OPEN_DIRECTORY = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A chain of `depth` directories `d/d/d…` in `dir` (far past PATH_MAX), a file at its bottom. */
function deepChain(dir: string, depth: number): void {
  let fd = openSync(dir, OPEN_DIRECTORY);
  for (let i = 0; i < depth; i++) {
    mkdirSync(`/proc/self/fd/${fd}/d`);
    const next = openSync(`/proc/self/fd/${fd}/d`, OPEN_DIRECTORY);
    closeSync(fd);
    fd = next;
  }
  writeFileSync(`/proc/self/fd/${fd}/bottom`, 'x');
  closeSync(fd);
}

/**
 * `count` names of empty files in `dir`, as a full Maildir's cur holds them: hard links, 50,000 to
 * an inode (ext4 allows 65,000), many times quicker to make than as many files, and as many names
 * for the removal to unlink.
 */
function manyFiles(dir: string, count: number): void {
  mkdirSync(dir, { recursive: true });
  const at = openSync(dir, OPEN_DIRECTORY);
  try {
    for (let i = 0; i < count; i++) {
      const name = `/proc/self/fd/${at}/${i}:2,S`;
      if (i % 50_000 === 0) closeSync(openSync(name, 'w'));
      else linkSync(`/proc/self/fd/${at}/${i - (i % 50_000)}:2,S`, name);
    }
  } finally {
    closeSync(at);
  }
}

/**
 * Runs `work` while a timer asks every 5 ms, and answers the longest the event loop went without
 * turning meanwhile, with how many times it turned.
 */
async function loopWhile(work: () => Promise<unknown>): Promise<{ longest: number; turns: number }> {
  let last = performance.now();
  let longest = 0;
  let turns = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    turns++;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  longest = Math.max(longest, performance.now() - last);
  return { longest, turns };
}

/**
 * The longest the loop may stall: far below what walking these trees takes on the main thread
 * (seconds), well above a busy two-core machine's scheduling hiccups.
 */
const STALL_MS = 750;

describe('removing a customer’s tree', () => {
  it('removes a home holding a chain 30,000 directories deep and a directory of 200,000 files; the event loop keeps turning', async () => {
    const base = tempDir('berth-removal-');
    const home = join(base, 'malb');
    mkdirSync(join(home, 'public_html'), { recursive: true });
    deepChain(join(home, 'public_html'), 30_000);
    manyFiles(join(home, 'mail/malb.example/info/Maildir/cur'), 200_000);
    const outside = join(tempDir(), 'keep');
    writeFileSync(outside, 'kept');
    symlinkSync(outside, join(home, 'public_html', 'link'));
    const { longest, turns } = await loopWhile(() => removeHome(home));
    assert.deepEqual(readdirSync(base), [], 'the home is gone');
    assert.equal(readFileSync(outside, 'utf8'), 'kept', 'the link was removed, not followed');
    assert.ok(longest < STALL_MS, `the event loop stalled ${Math.round(longest)} ms`);
    assert.ok(turns > 10, `the event loop turned ${turns} times while the removal ran`);
  });

  it('removes a mailbox’s directory of 200,000 files below a home, and nothing beside it', async () => {
    const home = tempDir('berth-removal-');
    manyFiles(join(home, 'mail/malb.example/info/Maildir/cur'), 200_000);
    mkdirSync(join(home, 'mail/malb.example/other/Maildir'), { recursive: true });
    const { longest, turns } = await loopWhile(() => removeTree(home, ['mail', 'malb.example', 'info']));
    assert.deepEqual(readdirSync(join(home, 'mail/malb.example')), ['other']);
    assert.ok(longest < STALL_MS, `the event loop stalled ${Math.round(longest)} ms`);
    assert.ok(turns > 10, `the event loop turned ${turns} times while the removal ran`);
  });

  it('removes nothing through a link on the way, and nothing when nothing is there', async () => {
    const home = tempDir('berth-removal-');
    const elsewhere = tempDir('berth-removal-');
    mkdirSync(join(elsewhere, 'info'));
    writeFileSync(join(elsewhere, 'info', 'precious'), 'kept');
    mkdirSync(join(home, 'mail'));
    symlinkSync(elsewhere, join(home, 'mail', 'malb.example'));
    await assert.rejects(removeTree(home, ['mail', 'malb.example', 'info']), UnsafePath);
    assert.equal(readFileSync(join(elsewhere, 'info', 'precious'), 'utf8'), 'kept');
    await removeTree(home, ['mail', 'nothing', 'here']);
    await removeHome(join(home, 'absent'));
    // A link in a home's place is removed itself.
    symlinkSync(elsewhere, join(home, 'linked-home'));
    await removeHome(join(home, 'linked-home'));
    assert.equal(lstatSync(join(home, 'linked-home'), { throwIfNoEntry: false }), undefined);
    assert.equal(readFileSync(join(elsewhere, 'info', 'precious'), 'utf8'), 'kept');
  });

  it('removes what a uid owns in a shared directory, however deep its own tree, and nothing of another’s', async () => {
    const shared = tempDir('berth-removal-');
    const [uid, other] = [64_001, 64_002];
    const own = join(shared, 'cache');
    mkdirSync(own);
    lchownSync(own, uid, uid);
    deepChain(own, 2_000);
    manyFiles(join(own, 'sessions'), 20_000);
    writeFileSync(join(shared, 'theirs'), 'kept');
    lchownSync(join(shared, 'theirs'), other, other);
    const { longest } = await loopWhile(async () =>
      assert.deepEqual(await removeOwnedBy(shared, uid), [`${shared}/cache`]),
    );
    assert.deepEqual(readdirSync(shared), ['theirs']);
    assert.ok(longest < STALL_MS, `the event loop stalled ${Math.round(longest)} ms`);
  });
});
