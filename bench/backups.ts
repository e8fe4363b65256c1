// The cost of backups (CONTRACT §15): N accounts on the linux driver in a throwaway system root,
// each with its files, backed up twice by the backup jobs with Debian's restic; the time of each
// run and how much the repository grew. Writes bench/backups.md, which `npm run bench` appends to
// docs/benchmarks.md (and which this copies there itself, between its markers).
//   node bench/backups.ts [--accounts 100] [--mb 2]
import { randomBytes } from 'node:crypto';
import { chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { queueAccountBackup, runDueBackups } from '../src/operations/backup-jobs.ts';
import { findAccount } from '../src/store/accounts.ts';
import { createAccount } from '../test/helpers.ts';
import { linuxSetup } from '../test/provision/system-root.ts';

const { values: flags } = parseArgs({
  options: { accounts: { type: 'string' }, mb: { type: 'string' }, out: { type: 'string' } },
});
const ACCOUNTS = Number(flags.accounts ?? 100);
const MB = Number(flags.mb ?? 2);
const OUT = flags.out ?? new URL('backups.md', import.meta.url).pathname;
const DOC = new URL('../docs/benchmarks.md', import.meta.url).pathname;

/** Bytes below a directory, links and all, without following them. */
function bytesBelow(dir: string): number {
  let total = 0;
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const stat = lstatSync(path);
    total += stat.isDirectory() ? bytesBelow(path) : stat.size;
  }
  return total;
}

/** A site of the account's own: `mb` MB of incompressible data in 20 files, and 100 small pages. */
function fillHome(home: string, mb: number): void {
  const { uid, gid } = statSync(home);
  const own = (path: string) => chownSync(path, uid, gid);
  const site = join(home, 'public_html');
  mkdirSync(join(site, 'media'), { recursive: true });
  own(site);
  own(join(site, 'media'));
  for (let i = 0; i < 20; i++) {
    writeFileSync(join(site, 'media', `${i}.bin`), randomBytes((mb * 1024 * 1024) / 20));
    own(join(site, 'media', `${i}.bin`));
  }
  for (let i = 0; i < 100; i++) {
    writeFileSync(join(site, `page-${i}.php`), `<?php echo "page ${i} of ${home}";\n`.repeat(40));
    own(join(site, `page-${i}.php`));
  }
}

async function main(): Promise<void> {
  const h = await linuxSetup();
  try {
    for (let i = 0; i < ACCOUNTS; i++) {
      const user = `bk${i}`;
      await createAccount(h, user, { domain: `${user}.example` });
      fillHome(join(h.root, 'home', user), MB);
    }
    const repository = h.services.config.backup.repository;
    const run = async () => {
      for (let i = 0; i < ACCOUNTS; i++) {
        const account = await findAccount(h.services.store.db, `bk${i}`);
        await queueAccountBackup(h.services, account!, 'call');
      }
      const started = performance.now();
      const ran = await runDueBackups(h.services);
      if (ran !== ACCOUNTS) throw new Error(`${ran} of ${ACCOUNTS} jobs ran`);
      const failed = await h.services.store.db
        .selectFrom('backup_jobs')
        .select('user')
        .where('state', '!=', 'done')
        .execute();
      if (failed.length > 0) throw new Error(`${failed.length} backups failed`);
      return (performance.now() - started) / 1000;
    };
    const before = 0;
    const first = await run();
    const afterFirst = bytesBelow(repository);
    const second = await run();
    const afterSecond = bytesBelow(repository);
    const homes = ACCOUNTS * MB;
    const cpu = cpus();
    const row = (name: string, seconds: number, grew: number) =>
      `| ${name} | ${seconds.toFixed(1)} | ${((seconds * 1000) / ACCOUNTS).toFixed(0)} | ${(grew / 1024 / 1024).toFixed(2)} |`;
    const lines = [
      '<!-- backups:start (written by node bench/backups.ts) -->',
      '',
      '## Backups',
      '',
      `${ACCOUNTS} accounts on the linux driver (a throwaway system root), each with ${MB} MB of incompressible`,
      'files in 20 files and 100 small PHP pages, backed up one after the other by the backup jobs with',
      `Debian's restic into one local repository (${homes} MB of homes in all), then again with nothing changed.`,
      `Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown'}, load average ${loadavg()[1]!.toFixed(1)} over the last 5`,
      `minutes (other work shares it); run at ${new Date().toISOString()}.`,
      '',
      '| run | seconds | ms per account | repository grew, MB |',
      '|---|---:|---:|---:|',
      row('first (everything new)', first, afterFirst - before),
      row('second (nothing changed)', second, afterSecond - afterFirst),
      '',
      'Each run is one restic process per account (a snapshot each, its own parent found by host and',
      'paths), so the second run costs restic’s start, the repository’s index and a walk of each home’s',
      'metadata: no file is read again and the repository grows by the snapshots’ trees alone',
      `(${((afterSecond - afterFirst) / ACCOUNTS / 1024).toFixed(1)} KB an account here).`,
      '',
      '<!-- backups:end -->',
      '',
    ];
    writeFileSync(OUT, lines.join('\n'));
    const doc = readFileSync(DOC, 'utf8');
    const section = lines.join('\n');
    const start = doc.indexOf('<!-- backups:start');
    const end = doc.indexOf('<!-- backups:end -->');
    const next =
      start >= 0 && end > start
        ? `${doc.slice(0, start)}${section}${doc.slice(end + '<!-- backups:end -->\n'.length)}`
        : `${doc.trimEnd()}\n\n${section}`;
    writeFileSync(DOC, next);
    process.stdout.write(section);
  } finally {
    await h.close();
  }
}

await main();
