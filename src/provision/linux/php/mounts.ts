// The mounts that make an account's PHP its view of the system (component.ts), made by one process
// inside the account's mount namespace: a fixed perl script that calls mount(2) for each step given
// as its arguments. A `mount` command a step cost a process each (about 15 for the view, more for
// /etc's hundred directories); one process makes them all in a few milliseconds.

/** mount(2)'s number on each architecture Berth runs on. */
const MOUNT_SYSCALL: Record<string, number> = { x64: 165, arm64: 40 };

/** mount(2)'s flags, as <linux/mount.h> has them. */
export const MS = { NOSUID: 2, NODEV: 4, NOEXEC: 8, BIND: 4096, MOVE: 8192, REC: 16384 } as const;

export type MountStep =
  /** `source` bound at `target` (with what is mounted below it when `recursive`). */
  | { bind: string; at: string; recursive?: boolean; optional?: boolean }
  /** A filesystem of `type` mounted at `at`. */
  | { mount: string; type: string; at: string; flags: number; data: string }
  /** The mount at `move` moved to `at`. */
  | { move: string; at: string }
  /** A directory made with `mode` (exactly, whatever the umask). */
  | { mkdir: string; mode: number };

/** A step as the script's six arguments: what, source, target, type, flags, data. */
function argumentsOf(step: MountStep): string[] {
  if ('bind' in step)
    return [
      step.optional ? 'may' : 'must',
      step.bind,
      step.at,
      '',
      String(MS.BIND | (step.recursive ? MS.REC : 0)),
      '',
    ];
  if ('mount' in step) return ['must', step.mount, step.at, step.type, String(step.flags), step.data];
  if ('move' in step) return ['must', step.move, step.at, '', String(MS.MOVE), ''];
  return ['mkdir', '', step.mkdir, '', '0', step.mode.toString(8)];
}

// A step that must hold ends the script at its failure (mount(2)'s error named); an optional one is
// reported and passed (a directory of the system's /etc gone meanwhile stays an empty one in the
// view: its absence stops no PHP). An empty type or data is passed as NULL.
const SCRIPT = [
  'my $nr = shift @ARGV;',
  'while (@ARGV) {',
  '  my ($what, $source, $target, $type, $flags, $data) = splice(@ARGV, 0, 6);',
  '  if ($what eq "mkdir") { (mkdir($target) and chmod(oct($data), $target)) or die "berth-mount: mkdir $target: $!\\n"; next }',
  '  next if syscall($nr, $source, $target, $type eq "" ? 0 : $type, $flags + 0, $data eq "" ? 0 : $data) == 0;',
  '  die "berth-mount: $target: $!\\n" if $what eq "must";',
  '  warn "berth-mount: $target: $!\\n";',
  '}',
].join(' ');

/** The command, run inside the namespace, that makes `steps` in order: a fixed script, the steps its arguments. */
export function mountCommand(steps: readonly MountStep[]): string[] {
  const mount = MOUNT_SYSCALL[process.arch];
  if (mount === undefined)
    throw new Error(`no mount system call is known for the architecture ${process.arch}`);
  return ['/usr/bin/perl', '-e', SCRIPT, String(mount), ...steps.flatMap(argumentsOf)];
}
