// Measuring an account's disk usage without a quota backend: a walk of its home in a thread of its
// own, bounded in time, that follows no link. An account that fills its home with empty files (they
// cost no quota) must not hold up the server's thread, which answers the API and the mail milters.
import assert from 'node:assert/strict';
import { chownSync, linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type Config, loadConfig } from '../../src/config/index.ts';
import { measureUsage } from '../../src/provision/linux/usage.ts';
import type { Account } from '../../src/store/accounts.ts';
import { tempDir } from '../helpers.ts';

const MiB = 1024 * 1024;
/** Enough entries that walking them on the server's thread holds it up for most of a second. */
const DIRECTORIES = 20;
const LINKS_EACH = 10_000;
const ACCOUNT_UID = 64_000;

const account = (user: string) => ({ user, domain: `${user}.example`, homedir: `/home/${user}` }) as Account;

/**
 * How many turns the event loop made while `work` ran: a handful when `work` held the thread
 * through its walk, a great many when the walk ran elsewhere and the thread stayed free.
 */
async function loopTurns(work: () => Promise<unknown>): Promise<number> {
  let turns = 0;
  let running = true;
  const turn = () => {
    if (!running) return;
    turns++;
    setImmediate(turn);
  };
  setImmediate(turn);
  try {
    await work();
  } finally {
    running = false;
  }
  return turns;
}

describe('disk usage measured by walking a home', () => {
  const root = tempDir('berth-usage-');
  let config: Config;

  before(() => {
    const defaults = loadConfig({ dataDir: tempDir() });
    config = { ...defaults, linux: { ...defaults.linux, systemRoot: root } };
    // 200,000 names of empty files (hard links: quicker to make than files), and 3 MiB of data.
    const home = join(root, 'home/many');
    for (let d = 0; d < DIRECTORIES; d++) {
      const dir = join(home, `d${d}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'empty'), '');
      for (let i = 0; i < LINKS_EACH; i++) linkSync(join(dir, 'empty'), join(dir, `f${i}`));
    }
    writeFileSync(join(home, 'data.bin'), Buffer.alloc(3 * MiB, 1));
    chownSync(join(home, 'data.bin'), ACCOUNT_UID, ACCOUNT_UID);
    // A link to a big file outside the home, and a home next door with a file of root's.
    const outside = join(tempDir(), 'outside.bin');
    writeFileSync(outside, Buffer.alloc(4 * MiB, 1));
    chownSync(outside, ACCOUNT_UID, ACCOUNT_UID);
    const small = join(root, 'home/small');
    mkdirSync(join(small, 'public_html'), { recursive: true });
    symlinkSync(outside, join(small, 'public_html/outside.bin'));
    symlinkSync(join(outside, '..'), join(small, 'elsewhere'));
    writeFileSync(join(small, 'root.bin'), Buffer.alloc(2 * MiB, 1));
    // A directory whose name is not UTF-8, 2 MiB of the account's in it.
    const odd = Buffer.concat([Buffer.from(join(root, 'home/odd/')), Buffer.from([0xff, 0xfe])]);
    mkdirSync(odd, { recursive: true });
    const hidden = Buffer.concat([odd, Buffer.from('/hidden.bin')]);
    writeFileSync(hidden, Buffer.alloc(2 * MiB, 1));
    chownSync(hidden, ACCOUNT_UID, ACCOUNT_UID);
  });

  it('leaves the event loop free while it walks, whatever the number of files', async () => {
    let measured: Awaited<ReturnType<typeof measureUsage>> | undefined;
    const turns = await loopTurns(async () => {
      measured = await measureUsage(config, [account('many')], new Map());
    });
    // Walked in Berth's own thread, the 200,000 names would leave it no turn until the end.
    assert.ok(turns >= 1_000, `the event loop turned ${turns} times during the walk`);
    assert.deepEqual(measured?.get('many'), { quota: 3, bandwidth: 0 });
  });

  it('stops a walk at its time limit and gives what it counted as a floor, saying so', async () => {
    const measured = await measureUsage(config, [account('many'), account('small')], new Map(), {
      limitMs: 1,
    });
    assert.match(measured.get('many')?.partial ?? '', /^stopped after 0\.001 s, \d+ entries in$/);
    assert.deepEqual(measured.get('small'), { quota: 0, bandwidth: 0 }, 'the next home is walked afresh');
  });

  it('follows no link and leaves out what root owns in the home', async () => {
    const measured = await measureUsage(config, [account('small'), account('gone')], new Map());
    assert.deepEqual(measured.get('small'), { quota: 0, bandwidth: 0 });
    assert.deepEqual(measured.get('gone'), { quota: 0, bandwidth: 0 }, 'a missing home holds nothing');
  });

  it('counts what is below a directory whose name is not UTF-8', async () => {
    const measured = await measureUsage(config, [account('odd')], new Map());
    assert.deepEqual(measured.get('odd'), { quota: 2, bandwidth: 0 });
  });

  it('takes the bytes the quota backend counted instead of walking the home', async () => {
    const measured = await measureUsage(config, [account('many')], new Map([['many', 5 * MiB + 1]]));
    assert.deepEqual(measured.get('many'), { quota: 6, bandwidth: 0 });
  });

  it('counts the traffic of every domain of the account as its bandwidth, not its main domain’s alone', async () => {
    const now = new Date();
    const month = now.toLocaleString('en-US', { month: 'short' });
    const stamp = `${String(now.getDate()).padStart(2, '0')}/${month}/${now.getFullYear()}:10:00:00 +0000`;
    const served = (bytes: number) => `203.0.113.1 - - [${stamp}] "GET / HTTP/1.1" 200 ${bytes} "-" "curl"\n`;
    for (const [domain, bytes] of [
      ['small.example', 1 * MiB],
      ['small-shop.example', 2 * MiB],
      ['blog.small.example', 3 * MiB],
    ] as const) {
      const dir = join(root, config.linux.logDir, domain);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'access.log'), served(bytes));
    }
    const counted = new Map([['small', 0]]);
    const domains = new Map([['small', ['small.example', 'small-shop.example', 'blog.small.example']]]);
    assert.equal(
      (await measureUsage(config, [account('small')], counted, { domains })).get('small')?.bandwidth,
      6,
    );
    // Without the account's domains, its main domain alone.
    assert.equal((await measureUsage(config, [account('small')], counted)).get('small')?.bandwidth, 1);
  });
});
