// npm test's runner: every test file, in lanes. The slow lanes (whole sandboxes, the browser, the
// benchmark smoke and soak, the WHMCS module) start first and the fast lane (the store, the
// operations, the API, the driver below a system root) fills the slots beside them, each file a
// `node --test` process of its own with its lane's time limit: a file that hangs is stopped and
// named, never left to hold the run. A file's output is printed whole when it ends, so that files
// running together never interleave, and the end of a failed file's output again after the summary,
// so that a log cut to its last lines still says why.
//
//   node scripts/test-lanes.ts [--lane NAME]... [FILE]...
//
// With files, those alone run (in their lanes); with --lane, those lanes alone. Exits 1 when any
// file failed or ran out of time.
import { spawn } from 'node:child_process';
import { globSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';

interface Lane {
  name: string;
  /** The lane's files: globs from the project's root. */
  files: string[];
  /** How many of its files run at once. */
  concurrency: number;
  /**
   * A file still running after this many minutes is stopped, and fails: a hang, never a slow
   * machine (about three times the file's time on two busy cores).
   */
  minutes: number;
}

/** The slow lanes first: the fast lane takes every file none of them names. */
const SLOW: Lane[] = [
  {
    name: 'sandbox',
    files: ['test/sandbox.test.ts', 'test/sandbox/*.test.ts', 'test/postgres/sandbox-*.test.ts'],
    // Three at a time: a sandbox mostly waits on its services and its clients.
    concurrency: 3,
    minutes: 20,
  },
  {
    name: 'browser',
    files: ['test/portal/browser.test.ts', 'test/portal/accessibility.test.ts', 'test/panel/browser.test.ts'],
    concurrency: 1,
    minutes: 12,
  },
  { name: 'bench', files: ['test/bench.test.ts', 'test/soak.test.ts'], concurrency: 1, minutes: 12 },
  { name: 'whmcs', files: ['test/integrations/*.test.ts'], concurrency: 1, minutes: 8 },
];
const FAST: Omit<Lane, 'files'> = { name: 'fast', concurrency: 2, minutes: 8 };
/**
 * How many files run at once, whatever their lanes: BERTH_TEST_SLOTS, else two more than the
 * machine's cores (at least four): a sandbox's file mostly waits on its services and its clients.
 */
const SLOTS = Number(process.env.BERTH_TEST_SLOTS) || Math.max(4, availableParallelism() + 2);

const ROOT = join(import.meta.dirname, '..');

function lanes(): Lane[] {
  const expand = (globs: string[]) => globs.flatMap((glob) => globSync(glob, { cwd: ROOT })).sort();
  const slow = SLOW.map((lane) => ({ ...lane, files: expand(lane.files) }));
  const taken = new Set(slow.flatMap((lane) => lane.files));
  const fast = expand(['test/**/*.test.ts']).filter((file) => !taken.has(file));
  // Slowest first: the order in which a freed slot is offered.
  return [...slow, { ...FAST, files: fast }];
}

interface Outcome {
  file: string;
  lane: string;
  seconds: number;
  result: 'passed' | 'failed' | 'out of time';
  /** What a file that did not pass printed: its end is printed again below the summary. */
  output: string;
}

/** How many lines of a failed file's output are printed again at the end of the run. */
const FAILURE_LINES = 120;

/** The process groups of the files running now: stopped with the run when it is stopped. */
const runningGroups = new Set<number>();
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const pid of runningGroups) signalGroup(pid, 'SIGTERM');
    process.exit(1);
  });

/** Runs one file; its output is printed whole when it ends. */
function runFile(lane: Lane, file: string): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--test', '--test-reporter=spec', file], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: when its time is up, whatever it started goes with it.
      detached: true,
    });
    runningGroups.add(child.pid!);
    const output: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => output.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => output.push(chunk));
    let outOfTime = false;
    const timer = setTimeout(() => {
      outOfTime = true;
      // SIGTERM first, so that a sandbox stops and unmounts; then whatever is left.
      signalGroup(child.pid!, 'SIGTERM');
      setTimeout(() => signalGroup(child.pid!, 'SIGKILL'), 30_000).unref();
    }, lane.minutes * 60_000);
    child.on('close', (code) => {
      runningGroups.delete(child.pid!);
      clearTimeout(timer);
      const seconds = (performance.now() - started) / 1000;
      const result = outOfTime ? 'out of time' : code === 0 ? 'passed' : 'failed';
      process.stdout.write(`\n== ${file} (${lane.name}, ${seconds.toFixed(0)} s): ${result}\n`);
      const printed = Buffer.concat(output);
      process.stdout.write(printed);
      if (outOfTime) process.stdout.write(`\n${file} was stopped after ${lane.minutes} minutes\n`);
      resolve({
        file,
        lane: lane.name,
        seconds,
        result,
        output: result === 'passed' ? '' : printed.toString(),
      });
    });
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/**
 * Every lane's files on a shared number of slots (see SLOTS: the hosting stack a sandbox
 * starts needs them as much as the fast files do). A freed slot goes to the first lane, slowest
 * first, that has a file waiting and fewer than its own limit running: the long files start at
 * once, and the fast ones fill the slots beside them.
 */
async function runLanes(chosen: Lane[], slots: number): Promise<Outcome[]> {
  const queues = new Map(chosen.map((lane) => [lane, [...lane.files]]));
  const running = new Map(chosen.map((lane) => [lane, 0]));
  const outcomes: Outcome[] = [];
  const next = (): [Lane, string] | null => {
    for (const lane of chosen) {
      const queue = queues.get(lane)!;
      if (queue.length > 0 && running.get(lane)! < lane.concurrency) return [lane, queue.shift()!];
    }
    return null;
  };
  const worker = async () => {
    for (let job = next(); job !== null; job = next()) {
      const [lane, file] = job;
      running.set(lane, running.get(lane)! + 1);
      outcomes.push(await runFile(lane, file));
      running.set(lane, running.get(lane)! - 1);
    }
  };
  await Promise.all(Array.from({ length: slots }, worker));
  return outcomes;
}

const args = process.argv.slice(2);
const wantedLanes = args.flatMap((arg, i) => (args[i - 1] === '--lane' ? [arg] : []));
const wantedFiles = new Set(
  args.filter((arg, i) => arg !== '--lane' && args[i - 1] !== '--lane').map((file) => relative(ROOT, file)),
);
const chosen = lanes()
  .filter((lane) => wantedLanes.length === 0 || wantedLanes.includes(lane.name))
  .map((lane) => ({
    ...lane,
    files: wantedFiles.size === 0 ? lane.files : lane.files.filter((file) => wantedFiles.has(file)),
  }))
  .filter((lane) => lane.files.length > 0);
const unknown = wantedLanes.filter((name) => !lanes().some((lane) => lane.name === name));
if (unknown.length > 0) {
  process.stderr.write(`test-lanes: no lane ${unknown.join(', ')}\n`);
  process.exit(2);
}

const outcomes = await runLanes(chosen, SLOTS);
process.stdout.write('\n== the lanes\n');
for (const lane of chosen) {
  const of = outcomes.filter((outcome) => outcome.lane === lane.name);
  const seconds = of.reduce((sum, outcome) => sum + outcome.seconds, 0);
  process.stdout.write(`${lane.name}: ${of.length} files, ${seconds.toFixed(0)} s of file time\n`);
}
const slowest = [...outcomes].sort((a, b) => b.seconds - a.seconds).slice(0, 8);
process.stdout.write(
  `slowest: ${slowest.map((outcome) => `${outcome.file} ${outcome.seconds.toFixed(0)} s`).join(', ')}\n`,
);
const bad = outcomes.filter((outcome) => outcome.result !== 'passed');
// The end of each failed file's output once more, where a log read from its end finds it.
for (const outcome of bad) {
  const lines = outcome.output.trimEnd().split('\n');
  process.stdout.write(`\n== the end of ${outcome.file} (${outcome.result}), again\n`);
  process.stdout.write(`${lines.slice(-FAILURE_LINES).join('\n')}\n`);
}
for (const outcome of bad) process.stdout.write(`✖ ${outcome.file}: ${outcome.result}\n`);
process.stdout.write(`${outcomes.length - bad.length} of ${outcomes.length} files passed\n`);
process.exit(bad.length > 0 ? 1 : 0);
