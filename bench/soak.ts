// npm run soak: a mixed load (create, list, suspend, unsuspend, passwd, usage) against `berth serve`
// for ten minutes, watching the server's memory and file descriptors, then checking that every call
// answered 200 is reflected in the store. Writes its figures into docs/reliability.md.
// `--seconds N` runs it shorter (the test suite does, for 20 seconds).
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { findAccount } from '../src/store/accounts.ts';
import { openStore } from '../src/store/open.ts';
import { tempDir } from '../test/helpers.ts';
import { berth, serve } from '../test/process.ts';

const { values: flags } = parseArgs({ options: { seconds: { type: 'string' }, out: { type: 'string' } } });
const SECONDS = Number(flags.seconds ?? 600);
const OUT = flags.out ?? new URL('../docs/reliability.md', import.meta.url).pathname;
const WORKERS = 8;
// The server runs with a bounded heap: a leak then ends in an out-of-memory crash, which fails the
// run, rather than in a slowly rising figure that V8's lazy collection could also explain.
const HEAP = '--max-old-space-size=256';
const START = '<!-- soak:start (written by npm run soak) -->';
const END = '<!-- soak:end -->';

interface Sample {
  at: number;
  rssMb: number;
  fds: number;
}

const dataDir = tempDir('berth-soak-');
await berth(['api-user', 'create', 'soak', '--password-stdin', '--data-dir', dataDir], 'soak-password-1');
const server = await serve(dataDir, [], { BERTH_LOG_LEVEL: 'warn', NODE_OPTIONS: HEAP });
const pid = server.child.pid!;
const agent = new Agent({
  keepAlive: true,
  maxSockets: WORKERS,
  ca: readFileSync(join(dataDir, 'tls/cert.pem')),
  servername: 'localhost',
});

function call(op: string, params: Record<string, string> = {}): Promise<number> {
  const body = new URLSearchParams({ apiuser: 'soak', apiauth: 'soak-password-1', ...params }).toString();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: server.adminPort,
        path: `/api/v1/${op}/`,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function sample(started: number): Sample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return {
    at: Math.round((performance.now() - started) / 1000),
    rssMb: Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024),
    fds: readdirSync(`/proc/${pid}/fd`).length,
  };
}

const counts = new Map<string, { ok: number; refused: number; failed: number }>();
const count = (op: string, status: number) => {
  const entry = counts.get(op) ?? { ok: 0, refused: 0, failed: 0 };
  if (status === 200) entry.ok++;
  else if (status >= 500) entry.failed++;
  else entry.refused++;
  counts.set(op, entry);
};

/**
 * Each worker owns its accounts, so what the store must hold at the end is known exactly. Each
 * keeps at most OWNED at a time, removing as it creates, so the data stays the same size and
 * growing memory would mean a leak.
 */
const expected = new Map<string, { suspended: boolean } | 'removed'>();
const OWNED = 40;

async function worker(n: number, until: number): Promise<void> {
  const mine: string[] = [];
  for (let i = 0; performance.now() < until; i++) {
    const roll = Math.random();
    const user = mine[Math.floor(Math.random() * mine.length)];
    if (roll < 0.3 && user && mine.length >= OWNED) {
      const status = await call('removeacct', { user });
      count('removeacct', status);
      if (status === 200) {
        mine.splice(mine.indexOf(user), 1);
        expected.set(user, 'removed');
      }
    } else if (roll < 0.3 || !user) {
      const fresh = `s${n}x${i.toString(36)}`;
      const status = await call('createacct', {
        user: fresh,
        domain: `${fresh}.example`,
        email: 'o@example.com',
        package: 'default',
      });
      count('createacct', status);
      if (status === 200) {
        mine.push(fresh);
        expected.set(fresh, { suspended: false });
      }
    } else if (roll < 0.45) {
      count(
        'suspendacct',
        await call('suspendacct', { user, reason: `soak ${i}` }).then((s) => {
          if (s === 200) expected.set(user, { suspended: true });
          return s;
        }),
      );
    } else if (roll < 0.6) {
      count(
        'unsuspendacct',
        await call('unsuspendacct', { user }).then((s) => {
          if (s === 200) expected.set(user, { suspended: false });
          return s;
        }),
      );
    } else if (roll < 0.72) {
      count('passwd', await call('passwd', { user }));
    } else if (roll < 0.84) {
      count('accountsummary', await call('accountsummary', { user }));
    } else if (roll < 0.95) {
      count('usagestatistics', await call('usagestatistics'));
    } else {
      count('listaccts', await call('listaccts'));
    }
  }
}

const started = performance.now();
const samples: Sample[] = [sample(started)];
const sampler = setInterval(() => samples.push(sample(started)), Math.max(1000, (SECONDS * 1000) / 60));
await Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n, started + SECONDS * 1000)));
clearInterval(sampler);
samples.push(sample(started));
agent.destroy();
await server.stop('SIGTERM');

const store = await openStore(dataDir);
let mismatches = 0;
for (const [user, state] of expected) {
  const account = await findAccount(store.db, user);
  const matches =
    state === 'removed' ? !account : account && (account.suspension !== null) === state.suspended;
  if (!matches) mismatches++;
}
await store.close();
rmSync(dataDir, { recursive: true, force: true });

const total = [...counts.values()].reduce((sum, c) => sum + c.ok + c.refused + c.failed, 0);
const failed = [...counts.values()].reduce((sum, c) => sum + c.failed, 0);
// Growth is judged once caches, the JIT and the heap have settled: after the first minute of a
// long run, half-way through a short one.
const settledAt = Math.min(60, SECONDS / 2);
const settled = samples.find((s) => s.at >= settledAt) ?? samples[samples.length - 1]!;
const last = samples[samples.length - 1]!;
const peak = samples.reduce((a, b) => (b.rssMb > a.rssMb ? b : a));
const rssGrowth = last.rssMb / settled.rssMb;
const fdGrowth = last.fds - settled.fds;
const verdict = failed === 0 && mismatches === 0 && rssGrowth < 1.5 && fdGrowth <= 5;

const lines = [
  START,
  `Last run: ${new Date().toISOString()}, ${SECONDS} s, ${WORKERS} concurrent clients, Node ${process.version} (${HEAP}), record driver, SQLite.`,
  '',
  '| operation | 200 | refused (4xx) | 5xx |',
  '|---|---:|---:|---:|',
  ...[...counts.entries()].sort().map(([op, c]) => `| ${op} | ${c.ok} | ${c.refused} | ${c.failed} |`),
  `| **all** | | | **${failed}** of ${total} calls (${Math.round(total / SECONDS)} per second) |`,
  '',
  `- Resident memory: ${samples[0]!.rssMb} MB at start, ${settled.rssMb} MB once settled, ${last.rssMb} MB at the end (peak ${peak.rssMb} MB).`,
  `- Open file descriptors: ${samples[0]!.fds} at start, ${settled.fds} once settled, ${last.fds} at the end.`,
  `- Accounts checked in the store afterwards: ${expected.size}, of which ${mismatches} did not match what their 200s said.`,
  `- Verdict: ${verdict ? 'held' : 'FAILED'} (no 5xx, every 200 in the store, memory within 1.5× and descriptors within 5 of the settled figures).`,
  END,
];
const doc = readFileSync(OUT, 'utf8');
const from = doc.indexOf(START);
const to = doc.indexOf(END);
if (from < 0 || to < from) throw new Error(`${OUT} lacks the soak markers`);
writeFileSync(OUT, `${doc.slice(0, from)}${lines.join('\n')}${doc.slice(to + END.length)}`);
process.stdout.write(`${lines.slice(1, -1).join('\n')}\n`);
process.exit(verdict ? 0 : 1);
