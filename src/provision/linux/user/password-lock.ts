// glibc's `lckpwdf` lock on the user database, the one the shadow tools take first, held for Berth
// by a small Perl process of its own (user/database.ts takes it for each rewrite).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

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
