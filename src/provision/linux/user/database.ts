// The system's user database (passwd, shadow, group and gshadow below the system root), edited by
// Berth for createacct and suspension: every edit waiting when a rewrite starts goes into that one
// rewrite of each file. useradd and usermod rewrite all four files for each user under the
// database's lock, so a burst of calls took turns there, each turn longer as the server filled
// (docs/linux-driver.md, "The user database, a burst at a time").
import { spawn } from 'node:child_process';
import { linkSync, lstatSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { appendToFile, readIfExists, sizeOf, writeFileAtomic } from '../files.ts';
import { fileStamp, rememberText } from '../known-files.ts';
import {
  FILES,
  type File,
  type NewUser,
  readDefaults,
  type Tables,
  type UserEdit,
  userTables,
} from './database-edits.ts';

export type { NewUser, UserEdit };

export interface UserDatabase {
  /** Settles when the edit is written, or rejects with why it was not (nothing of it written). */
  edit(change: UserEdit): Promise<void>;
  /** Settles when the user and its group are written, or rejects with why not (nothing written). */
  add(user: NewUser): Promise<void>;
}

/**
 * Takes and gives back glibc's `lckpwdf` lock, the one the shadow tools take first (an fcntl lock
 * on /etc/.pwd.lock, which Node cannot take), at each line Berth sends: `lock` answers `locked`
 * once held (waiting 15 s, as lckpwdf waits) or why not, `unlock` gives it back. It ends with its
 * standard input, and Berth's end ends it, the lock with it. `struct flock` packed as on Linux's
 * 64-bit ABIs (amd64, arm64).
 */
const LOCK_HOLDER = `
use Fcntl;
sysopen(my $lock, $ARGV[0], O_WRONLY | O_CREAT, 0600) or die "cannot open $ARGV[0]: $!\\n";
$| = 1;
while (my $line = <STDIN>) {
  if ($line eq "lock\\n") {
    my $held = eval {
      local $SIG{ALRM} = sub { die "$ARGV[0] stayed locked for 15 s\\n" };
      alarm 15;
      my $request = pack('ssx4qqix4', F_WRLCK, 0, 0, 0, 0);
      fcntl($lock, F_SETLKW, $request) or die "cannot lock $ARGV[0]: $!\\n";
      alarm 0;
      1;
    };
    alarm 0;
    print $held ? "locked\\n" : "failed $@";
  } elsif ($line eq "unlock\\n") {
    my $request = pack('ssx4qqix4', F_UNLCK, 0, 0, 0, 0);
    fcntl($lock, F_SETLK, $request);
  }
}
`;

export interface PasswordLock {
  /** Takes the lock; the function returned gives it back. One holder at a time. */
  hold(): Promise<() => void>;
}

/**
 * The lckpwdf lock of one system root, through one lasting Perl process (started at the first
 * hold, again if it ended): starting a process from Berth's own for every rewrite cost its thread
 * more than the rewrite. Idle, it keeps no one waiting (a CLI command, a test may end).
 */
export function passwordLock(path: string): PasswordLock {
  let holder: ReturnType<typeof start> | null = null;
  function start() {
    const child = spawn('/usr/bin/perl', ['-e', LOCK_HOLDER, path], { stdio: ['pipe', 'pipe', 'pipe'] });
    const current = { child, answer: null as ((line: string) => void) | null, stderr: '' };
    createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      const answer = current.answer;
      current.answer = null;
      answer?.(line);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      current.stderr = (current.stderr + chunk.toString()).slice(-2000);
    });
    child.stdin.on('error', () => {});
    const ended = (why: string) => {
      if (holder === current) holder = null;
      current.answer?.(`failed ${current.stderr.trim() || why}`);
      current.answer = null;
    };
    child.on('error', (error) => ended(error.message));
    child.on('exit', (code, signal) => ended(`the lock's holder ended (${code ?? signal})`));
    return current;
  }
  const handles = (current: NonNullable<typeof holder>) =>
    [current.child, current.child.stdin, current.child.stdout, current.child.stderr] as unknown as {
      ref(): void;
      unref(): void;
    }[];
  return {
    hold() {
      holder ??= start();
      const current = holder;
      for (const handle of handles(current)) handle.ref();
      return new Promise((resolve, reject) => {
        current.answer = (line) => {
          if (line === 'locked')
            return resolve(() => {
              current.child.stdin.write('unlock\n');
              for (const handle of handles(current)) handle.unref();
            });
          for (const handle of handles(current)) handle.unref();
          reject(new Error(line.replace(/^failed /, '') || `cannot lock ${path}`));
        };
        current.child.stdin.write('lock\n');
      });
    },
  };
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
 * `<file>.lock`. A lock whose process has ended is theirs to break and so Berth's; a live one (or
 * one whose process cannot be read yet) is waited for, until `deadline`.
 */
async function lockFile(path: string, deadline: number): Promise<() => void> {
  const lock = `${path}.lock`;
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, String(process.pid), { mode: 0o600 });
  try {
    for (;;) {
      try {
        linkSync(mine, lock);
        return () => rmSync(lock, { force: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const holder = Number.parseInt(readIfExists(lock) ?? '', 10);
      if (holder > 0 && !alive(holder)) rmSync(lock, { force: true });
      else if (Date.now() > deadline) throw new Error(`${path} stayed locked by process ${holder}`);
      else await new Promise((wake) => setTimeout(wake, 10));
    }
  } finally {
    rmSync(mine, { force: true });
  }
}

/**
 * The locks of the whole database, in the shadow tools' order, waited for 15 s in all; the function
 * returned frees them (each, whatever another's release throws).
 */
async function lockDatabase(etc: string, lock: PasswordLock): Promise<() => void> {
  const deadline = Date.now() + 15_000;
  const held: (() => void)[] = [await lock.hold()];
  const free = () => {
    let failed: unknown = null;
    for (const release of held.reverse()) {
      try {
        release();
      } catch (error) {
        failed ??= error;
      }
    }
    if (failed) throw failed;
  };
  try {
    for (const file of FILES) held.push(await lockFile(join(etc, file), deadline));
  } catch (error) {
    free();
    throw error;
  }
  return free;
}

/** One file as it was read: its text, to write back as it was, its size in bytes, mode and group. */
interface Read {
  original: string;
  size: number;
  mode: number;
  gid: number;
}

/**
 * A file's text, where each of its lines begins in it (`starts`; null when the text does not end
 * with a newline, so that the next rewrite joins every line), and each line split at `:`.
 */
function readFile(path: string): Read & { starts: number[] | null; lines: string[][] } {
  const original = readFileSync(path, 'utf8');
  const stat = lstatSync(path);
  if (!stat.isFile()) throw new Error(`${path} is not a file`);
  const { mode, gid, size } = stat;
  const texts = original.split('\n');
  if (texts.at(-1) === '') texts.pop();
  const whole = original === '' || original.endsWith('\n');
  return {
    starts: whole ? startsOf(texts) : null,
    lines: texts.map((line) => line.split(':')),
    original,
    size,
    mode: mode & 0o7777,
    gid,
  };
}

/** Where each line begins in the text of `texts` joined, each ended by a newline. */
function startsOf(texts: readonly string[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const text of texts) {
    starts.push(at);
    at += text.length + 1;
  }
  return starts;
}

/**
 * The file's text with the touched lines of `lines` written again, made from its text as last
 * written: each changed line cut out and its new text put in, lines added last put at the end, so
 * that a file of a line an account is not joined again for a few of them. Lines added anywhere
 * else (or a text without its last newline): every line is joined. `file.starts` is brought up to
 * date. `added`: the text of the lines added at the end, when nothing else changed (the file may
 * then be appended to). Null when no line was touched.
 */
function rewritten(
  file: { original: string; starts: number[] | null },
  lines: string[][],
  touched: Set<string[]>,
): { text: string; added: string | null } | null {
  if (touched.size === 0) return null;
  const { original, starts } = file;
  const kept = starts?.length ?? 0;
  if (starts === null || lines.length < kept || !lines.slice(kept).every((line) => touched.has(line))) {
    const texts = lines.map((line) => line.join(':'));
    file.starts = startsOf(texts);
    touched.clear();
    return { text: texts.length === 0 ? '' : `${texts.join('\n')}\n`, added: null };
  }
  const changed: [number, string][] = [];
  for (const line of touched) {
    const at = lines.indexOf(line);
    if (at !== -1 && at < kept) changed.push([at, line.join(':')]);
  }
  touched.clear();
  changed.sort((a, b) => a[0] - b[0]);
  const endOf = (at: number) => (at + 1 < kept ? starts[at + 1]! : original.length);
  const pieces: string[] = [];
  let from = 0;
  for (const [at, text] of changed) {
    pieces.push(original.slice(from, starts[at]), text, '\n');
    from = endOf(at);
  }
  // Lines added alone: the text is the old one and the new lines, the old one not copied.
  if (changed.length > 0) pieces.push(original.slice(from));
  // The lines after each changed one begin as far later as the lines changed before them grew.
  const grown = changed.map(([at, text]) => text.length + 1 - (endOf(at) - starts[at]!));
  let shift = 0;
  for (const [c, [at]] of changed.entries()) {
    shift += grown[c]!;
    const until = c + 1 < changed.length ? changed[c + 1]![0] : kept - 1;
    for (let i = at + 1; i <= until; i++) starts[i]! += shift;
  }
  let length = original.length + shift;
  for (const line of lines.slice(kept)) {
    const text = line.join(':');
    starts.push(length);
    pieces.push(text, '\n');
    length += text.length + 1;
  }
  if (changed.length > 0) return { text: pieces.join(''), added: null };
  const added = pieces.join('');
  return { text: original + added, added };
}

/**
 * The four files as Berth last wrote (or read) them, split into lines, with the edits over those
 * lines: a burst's next rewrite starts from them while every file is still the one they were
 * taken from and login.defs says the same. Reading and splitting the whole database again for
 * each rewrite cost Berth's thread more than anything else in a burst of suspensions.
 */
interface Known {
  stamps: Record<File, string>;
  loginDefs: string;
  read: Record<File, ReturnType<typeof readFile>>;
  tables: Tables;
  edits: ReturnType<typeof userTables>;
}

/**
 * Replaces the file whole as the shadow tools do: a new `<file>+` (a name PHP's views of /etc leave
 * out, see php/etc-view.ts) with the old one's mode and group, renamed over it. Its readers in this
 * process (passwd.ts) take the text written, not the file read again.
 */
const replace = (path: string, content: string, { mode, gid }: Read) => {
  writeFileAtomic(path, content, mode, gid, `${path}+`);
  rememberText(path, content);
};

/**
 * Adds lines at the end of the file in place (appendToFile): a new user's line in passwd and
 * shadow, where a new file for each createacct cost as much as the file is long. Readers of the
 * file see the lines before them as they were throughout; the new user, not yet answered for, may
 * be seen before its line is whole. A file whose lines change is replaced whole, as above.
 */
const append = (path: string, added: string, text: string, { original, size }: Read) => {
  appendToFile(path, added, size);
  rememberText(path, text, { before: original, added });
};

const WRITE_ORDER = ['shadow', 'gshadow', 'group', 'passwd'] as const;

/** login.defs' text; none is no failure (useradd's defaults then). */
function readLoginDefs(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw error;
  }
}

interface Waiting {
  apply(tables: ReturnType<typeof userTables>): void;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** The user database below `root`, edited a burst at a time. */
export function userDatabase(root: string): UserDatabase {
  const etc = join(root, 'etc');
  const lock = passwordLock(join(etc, '.pwd.lock'));
  let waiting: Waiting[] = [];
  let writing = false;
  let known: Known | null = null;

  /** The files as they are now: what Berth knows of them when they are still that, else read. */
  const current = (): Known => {
    const stamps = Object.fromEntries(FILES.map((file) => [file, fileStamp(join(etc, file))])) as Record<
      File,
      string
    >;
    const loginDefs = readLoginDefs(join(etc, 'login.defs'));
    const last = known;
    known = null;
    if (last && last.loginDefs === loginDefs && FILES.every((file) => last.stamps[file] === stamps[file]))
      return last;
    const read = Object.fromEntries(FILES.map((file) => [file, readFile(join(etc, file))])) as Record<
      File,
      ReturnType<typeof readFile>
    >;
    // Stamped before reading: a file changed in between is read again next time.
    const tables = Object.fromEntries(FILES.map((file) => [file, read[file].lines])) as Tables;
    return { stamps, loginDefs, read, tables, edits: userTables(tables, readDefaults(loginDefs)) };
  };

  /** Writes one rewrite of each file for the edits of `batch`; each settles with its own outcome. */
  const write = async (batch: Waiting[]) => {
    let release: () => void;
    try {
      release = await lockDatabase(etc, lock);
    } catch (error) {
      for (const { reject } of batch) reject(error as Error);
      return;
    }
    const written: [File, Read][] = [];
    try {
      // Forgotten until this rewrite is written whole: a failure leaves the next one to read.
      const { read, tables, edits, loginDefs, stamps } = current();
      const applied: Waiting[] = [];
      for (const waiter of batch) {
        try {
          waiter.apply(edits);
          applied.push(waiter);
        } catch (error) {
          waiter.reject(error as Error);
        }
      }
      try {
        // passwd last: a new user appears once its password and group are there, and a suspended
        // one's password is locked before its shell changes.
        const contents = {} as Record<File, string>;
        for (const file of WRITE_ORDER) {
          const next = rewritten(read[file], tables[file], edits.touched[file]);
          if (next === null || next.text === read[file].original) continue;
          contents[file] = next.text;
          if (next.added === null) replace(join(etc, file), next.text, read[file]);
          else append(join(etc, file), next.added, next.text, read[file]);
          written.push([file, read[file]]);
        }
        for (const [file] of written) {
          stamps[file] = fileStamp(join(etc, file));
          read[file] = { ...read[file], original: contents[file], size: sizeOf(join(etc, file)) };
        }
      } catch (error) {
        // The files replaced so far are put back: the database stays as it was for every edit.
        for (const [file, before] of written) replace(join(etc, file), before.original, before);
        throw error;
      }
      known = { stamps, loginDefs, read, tables, edits };
      for (const { resolve } of applied) resolve();
    } catch (error) {
      for (const { reject } of batch) reject(error as Error);
    } finally {
      try {
        release();
      } catch (error) {
        // Written already: what could not be freed is a stale lock the shadow tools break.
        process.emitWarning(`the user database's locks were not all freed: ${(error as Error).message}`);
      }
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

  const queue = (apply: Waiting['apply']) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ apply, resolve, reject });
      if (!writing) void drain();
    });

  return {
    edit: (change) => queue((edits) => edits.edit(change)),
    add: (user) => queue((edits) => edits.add(user)),
  };
}
