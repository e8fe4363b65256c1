// Suspension's edits of the system's user database (passwd, shadow, group and gshadow below the
// system root), made by Berth: every edit waiting when a rewrite starts goes into that one rewrite
// of each file. usermod rewrites all four files for each user under the database's lock, so a
// burst of suspensions took turns there, each turn longer as the server filled (docs/linux-driver.md,
// "The user database").
import { spawn } from 'node:child_process';
import { linkSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../files.ts';

export interface UserEdit {
  user: string;
  /** The password locked (`!` before its hash) or unlocked, as usermod -L and -U leave it. */
  locked: boolean;
  shell: string;
  /** The user's supplementary groups, exactly (usermod -G); left as they are when absent. */
  groups?: readonly string[];
}

export interface UserDatabase {
  /** Settles when the edit is written, or rejects with why it was not (nothing of it written). */
  edit(change: UserEdit): Promise<void>;
}

const FILES = ['passwd', 'shadow', 'group', 'gshadow'] as const;
type File = (typeof FILES)[number];

/**
 * Holds glibc's `lckpwdf` lock, the one the shadow tools take first (an fcntl lock on
 * /etc/.pwd.lock, which Node cannot take), until its standard input ends: Berth's end ends it too.
 * `struct flock` packed as on Linux's 64-bit ABIs (amd64, arm64). It waits 15 s, as lckpwdf does.
 */
const LOCK_HOLDER = `
use Fcntl;
open(my $lock, '>>', $ARGV[0]) or die "cannot open $ARGV[0]: $!\\n";
$SIG{ALRM} = sub { die "$ARGV[0] stayed locked for 15 s\\n" };
alarm 15;
my $request = pack('ssx4qqix4', F_WRLCK, 0, 0, 0, 0);
fcntl($lock, F_SETLKW, $request) or die "cannot lock $ARGV[0]: $!\\n";
alarm 0;
$| = 1;
print "locked\\n";
1 while <STDIN>;
`;

/** Takes the lckpwdf lock; the function returned gives it back. */
function holdPasswordLock(path: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const holder = spawn('/usr/bin/perl', ['-e', LOCK_HOLDER, path], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    let answered = false;
    holder.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    holder.stdin.on('error', () => {});
    holder.on('error', (error) => {
      if (!answered) reject(error);
      answered = true;
    });
    holder.on('exit', () => {
      if (!answered) reject(new Error(stderr.trim() || `cannot lock ${path}`));
      answered = true;
    });
    holder.stdout.once('data', () => {
      if (answered) return;
      answered = true;
      resolve(() => holder.stdin.end());
    });
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Takes a file's lock as the shadow tools do (commonio): a file naming this process, linked to
 * `<file>.lock`. A lock whose process has ended is theirs to break and so Berth's; a live one is
 * waited for, up to 15 s.
 */
async function lockFile(path: string): Promise<() => void> {
  const lock = `${path}.lock`;
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (const started = Date.now(); ; ) {
      try {
        linkSync(mine, lock);
        return () => rmSync(lock, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = Number.parseInt(readFileSync(lock, 'utf8'), 10);
      if (!Number.isInteger(holder) || holder <= 0 || !alive(holder)) rmSync(lock, { force: true });
      else if (Date.now() - started > 15_000) throw new Error(`${path} stayed locked by process ${holder}`);
      else await new Promise((wake) => setTimeout(wake, 10));
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

/** The locks of the whole database, in the shadow tools' order; the function returned frees them. */
async function lockDatabase(etc: string): Promise<() => void> {
  const held: (() => void)[] = [await holdPasswordLock(join(etc, '.pwd.lock'))];
  const free = () => {
    for (const release of held.reverse()) release();
  };
  try {
    for (const file of FILES) held.push(await lockFile(join(etc, file)));
  } catch (error) {
    free();
    throw error;
  }
  return free;
}

/** One file's lines, each split at `:`, and what it was read as (to write it back as it was). */
interface Table {
  lines: string[][];
  original: string;
  mode: number;
  gid: number;
}

function readTable(path: string): Table {
  const original = readFileSync(path, 'utf8');
  const { mode, gid } = statSync(path);
  const lines = original.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return { lines: lines.map((line) => line.split(':')), original, mode: mode & 0o7777, gid };
}

const render = (table: Table) => `${table.lines.map((line) => line.join(':')).join('\n')}\n`;

/** Applies one edit to the tables read; throws before changing anything when it cannot apply. */
function apply(tables: Record<File, Table>, edit: UserEdit): void {
  const find = (file: File, name: string) => tables[file].lines.find((line) => line[0] === name);
  const user = find('passwd', edit.user);
  const shadow = find('shadow', edit.user);
  if (!user || user.length < 7 || !shadow || shadow.length < 2)
    throw new Error(`user '${edit.user}' does not exist`);
  for (const group of edit.groups ?? [])
    if (!find('group', group)) throw new Error(`group '${group}' does not exist`);
  user[6] = edit.shell;
  const hash = shadow[1]!;
  if (edit.locked && !hash.startsWith('!')) shadow[1] = `!${hash}`;
  // A password never set stays locked: unlocking it would leave none (as usermod -U refuses).
  if (!edit.locked && hash.startsWith('!') && hash.length > 1) shadow[1] = hash.slice(1);
  if (!edit.groups) return;
  const wanted = new Set(edit.groups);
  // A member stays where it is in the list, and a new one comes last (as usermod -G leaves them).
  const member = (line: string[], at: number) => {
    const wants = wanted.has(line[0]!);
    if (line.length <= at || (line[at] === '' && !wants)) return;
    const members = line[at]!.split(',').filter((name) => name !== '');
    if (members.includes(edit.user) === wants) return;
    line[at] = (wants ? [...members, edit.user] : members.filter((name) => name !== edit.user)).join(',');
  };
  for (const line of tables.group.lines) member(line, 3);
  for (const line of tables.gshadow.lines) member(line, 3);
}

interface Waiting {
  edit: UserEdit;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** The user database below `root`, edited a burst at a time. */
export function userDatabase(root: string): UserDatabase {
  const etc = join(root, 'etc');
  let waiting: Waiting[] = [];
  let writing = false;

  /** Writes one rewrite of each file for the edits of `batch`; each settles with its own outcome. */
  const write = async (batch: Waiting[]) => {
    let release: () => void;
    try {
      release = await lockDatabase(etc);
    } catch (error) {
      for (const { reject } of batch) reject(error as Error);
      return;
    }
    const written: [File, Table][] = [];
    try {
      const tables = Object.fromEntries(FILES.map((file) => [file, readTable(join(etc, file))])) as Record<
        File,
        Table
      >;
      const applied: Waiting[] = [];
      for (const waiter of batch) {
        try {
          apply(tables, waiter.edit);
          applied.push(waiter);
        } catch (error) {
          waiter.reject(error as Error);
        }
      }
      try {
        for (const file of FILES) {
          const table = tables[file];
          const content = render(table);
          if (content === table.original) continue;
          writeFileAtomic(join(etc, file), content, table.mode, table.gid);
          written.push([file, table]);
        }
      } catch (error) {
        // The files written so far are put back: the database stays as it was for every edit.
        for (const [file, table] of written)
          writeFileAtomic(join(etc, file), table.original, table.mode, table.gid);
        throw error;
      }
      for (const { resolve } of applied) resolve();
    } catch (error) {
      for (const { reject } of batch) reject(error as Error);
    } finally {
      release();
    }
  };

  const drain = async () => {
    writing = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting;
        waiting = [];
        await write(batch);
      }
    } finally {
      writing = false;
    }
  };

  return {
    edit(change) {
      return new Promise((resolve, reject) => {
        waiting.push({ edit: change, resolve, reject });
        if (!writing) void drain();
      });
    },
  };
}
