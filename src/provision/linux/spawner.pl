#!/usr/bin/perl
# Starts Berth's system commands for it (run.ts): a small process of its own, fed one request a
# line on its standard input and answering each on its standard output. Starting a process forks
# the process that starts it, and a fork costs with the size of what forks (its page tables are
# copied): from Berth's server, hundreds of MB, about 5 ms of Berth's own thread a command; from a
# Node process, 2 ms or more, growing with what its heap has held (the quota sweep's listings). So
# Perl, from perl-base alone: a few MB that stay a few MB, and a fork well under a millisecond.
#
# Every field of a request or an answer is `x` and its bytes in hex, fields apart by one space.
# A request:  id run <umask or empty> <timeout ms> <input> <argc> <argv...> <env key> <env value>...
#             id start - - - <argc> <argv...> <env key> <env value>...
#             id stream - <timeout ms> - <argc> <argv...>
# An answer:  id done <stdout> <stderr>
#             id output <bytes>, of a command streamed: its output as it comes, then done (with no
#             stdout) or failed
#             id failed <stdout> <stderr> <why> <exit status, or empty when it had none>
#             id started <pid>, then id exited when that process ends (or id exited <why> when it
#             never started)
# A command runs with the request's environment and PATH and LANG=C, without a shell; a started one
# (an account's PHP-FPM master) with exactly the request's environment, in a session of its own,
# its input and output /dev/null. The spawner ends with its input (Berth gone).
use strict;
use warnings;
use Errno ();
use IO::Select;
use POSIX qw(WNOHANG _exit setsid);

my $PATH = '/usr/sbin:/usr/bin:/sbin:/bin';
my $MAX_OUTPUT = 4 * 1024 * 1024;
$SIG{PIPE} = 'IGNORE';
# A command's end wakes the wait below through a pipe of its own: a signal that came just before
# the wait began would not cut it short.
pipe(my $ended_r, my $ended_w) or die "spawner: pipe: $!";
$_->blocking(0) for $ended_r, $ended_w;
$SIG{CHLD} = sub { syswrite($ended_w, 'x') };

my %running;     # by id: pid, output (out, err), pipes, input left, deadline, status, why
my %pipe_of;     # by file number: [id, 'out' | 'err' | 'in']
my %run_of_pid;  # pid => id, of a command run
my %started;     # pid => id, of a process started
my $readers = IO::Select->new(\*STDIN, $ended_r);
my $writers = IO::Select->new();
my $requests = '';
# Seconds on a clock that only goes forward, to a tick (perl-base has no finer one).
my $TICK = POSIX::sysconf(POSIX::_SC_CLK_TCK());
sub now { return (POSIX::times())[0] / $TICK }

sub field { return 'x' . unpack('H*', $_[0] // '') }
sub unfield { my ($f) = @_; return pack('H*', substr($f, 1)) }

sub answer {
  my $line = join(' ', map { field($_) } @_) . "\n";
  while (length $line) {
    my $wrote = syswrite(STDOUT, $line);
    if (!defined $wrote) { next if $!{EINTR}; exit 0 }
    substr($line, 0, $wrote) = '';
  }
}

sub errno_name {
  local $! = $_[0];
  for my $name (keys %!) { return $name if $!{$name} }
  return "errno $_[0]";
}

# Forks and execs; the child's failure to exec comes back on a pipe closed on exec. Answers the
# pid, or undef and why not.
sub launch {
  my ($argv, $prepare) = @_;
  pipe(my $exec_r, my $exec_w) or return (undef, "spawn $argv->[0] " . errno_name($! + 0));
  my $pid = fork;
  return (undef, "spawn $argv->[0] " . errno_name($! + 0)) unless defined $pid;
  if ($pid == 0) {
    $SIG{PIPE} = 'DEFAULT';
    $SIG{CHLD} = 'DEFAULT';
    close $exec_r;
    $prepare->();
    { exec { $argv->[0] } @$argv }
    syswrite($exec_w, pack('N', $! + 0));
    _exit(127);
  }
  close $exec_w;
  my ($got, $errno);
  do { $got = sysread($exec_r, $errno, 4) } while (!defined $got && $!{EINTR});
  close $exec_r;
  if ($got) {
    waitpid($pid, 0);
    return (undef, "spawn $argv->[0] " . errno_name(unpack('N', $errno)));
  }
  return ($pid, undef);
}

sub run_command {
  my ($id, $umask, $timeout, $input, $argv, $env, $streamed) = @_;
  my (@in, @out, @err);
  pipe($in[0], $in[1]) && pipe($out[0], $out[1]) && pipe($err[0], $err[1])
    or return answer($id, 'failed', '', '', "spawn $argv->[0] " . errno_name($! + 0), '');
  my ($pid, $why) = launch($argv, sub {
    open(STDIN, '<&', $in[0]) && open(STDOUT, '>&', $out[1]) && open(STDERR, '>&', $err[1]) or _exit(127);
    umask($umask) if $umask ne '';
    %ENV = (%$env, PATH => $PATH, LANG => 'C');
  });
  close $_ for $in[0], $out[1], $err[1];
  if (!defined $pid) {
    close $_ for $in[1], $out[0], $err[0];
    return answer($id, 'failed', '', '', $why, '');
  }
  my $run = {
    pid => $pid, out => '', err => '', open => 2, input => $input, in => $in[1],
    deadline => now() + $timeout / 1000, streamed => $streamed,
  };
  $running{$id} = $run;
  $run_of_pid{$pid} = $id;
  for ([$out[0], 'out'], [$err[0], 'err']) {
    $pipe_of{fileno $_->[0]} = [$id, $_->[1], $_->[0]];
    $readers->add($_->[0]);
  }
  $_->blocking(0) for $in[1], $out[0], $err[0];
  if (length $input) {
    $pipe_of{fileno $in[1]} = [$id, 'in', $in[1]];
    $writers->add($in[1]);
  } else {
    close $in[1];
    delete $run->{in};
  }
}

sub start_process {
  my ($id, $argv, $env) = @_;
  my ($pid, $why) = launch($argv, sub {
    setsid();
    open(STDIN, '<', '/dev/null') && open(STDOUT, '>', '/dev/null') && open(STDERR, '>', '/dev/null') or _exit(127);
    %ENV = %$env;
  });
  return answer($id, 'exited', $why) unless defined $pid;
  $started{$pid} = $id;
  answer($id, 'started', $pid);
}

sub request {
  my @fields = map { unfield($_) } split / /, $_[0];
  my ($id, $kind, $umask, $timeout, $input, $argc) = splice(@fields, 0, 6);
  my @argv = splice(@fields, 0, $argc);
  my %env = @fields;
  if ($kind eq 'start') { start_process($id, \@argv, \%env) }
  else { run_command($id, $umask, $timeout, $input, \@argv, \%env, $kind eq 'stream') }
}

sub stop_reading {
  my ($fh) = @_;
  my $pipe = delete $pipe_of{fileno $fh};
  $readers->remove($fh);
  $writers->remove($fh);
  close $fh;
  return $pipe;
}

# Answers a command once it has exited and both its outputs have ended.
sub settle {
  my ($id) = @_;
  my $run = $running{$id};
  return unless $run->{open} == 0 && defined $run->{status};
  delete $running{$id};
  stop_reading($run->{in}) if $run->{in};
  my $status = $run->{status};
  return answer($id, 'done', $run->{out}, $run->{err}) if $status == 0 && !$run->{why};
  my $code = ($status & 127) ? '' : $status >> 8;
  my $why = $run->{why} // ($code eq '' ? 'killed by signal ' . ($status & 127) : "exit $code");
  answer($id, 'failed', $run->{out}, $run->{err}, "Command failed: $why", $code);
}

sub reap {
  while ((my $pid = waitpid(-1, WNOHANG)) > 0) {
    if (defined(my $id = delete $run_of_pid{$pid})) {
      $running{$id}{status} = $?;
      settle($id);
    } elsif (defined($id = delete $started{$pid})) {
      answer($id, 'exited');
    }
  }
}

sub end_past_time {
  my $now = now();
  for my $run (values %running) {
    next if defined $run->{status} || $run->{why} || $run->{deadline} > $now;
    $run->{why} = 'timed out';
    kill 'TERM', $run->{pid};
  }
}

# How long to wait for the next request, output or end: until the next deadline.
sub wait_for {
  my $wait = 1;
  for my $run (values %running) {
    my $left = $run->{deadline} - now();
    $wait = $left if $left < $wait;
  }
  return $wait < 0.01 ? 0.01 : $wait;
}

while (1) {
  my ($readable, $writable) = IO::Select->select($readers, $writers, undef, wait_for());
  for my $fh (@{ $readable // [] }) {
    if ($fh == \*STDIN) {
      my $got = sysread(STDIN, $requests, 65536, length $requests);
      exit 0 if defined $got && $got == 0;
      while ((my $end = index($requests, "\n")) >= 0) {
        request(substr($requests, 0, $end));
        substr($requests, 0, $end + 1) = '';
      }
      next;
    }
    if ($fh == $ended_r) {
      sysread($ended_r, my $drained, 4096);
      next;
    }
    my $pipe = $pipe_of{fileno($fh) // -1} or next;
    my ($id, $which) = @$pipe;
    my $run = $running{$id};
    my $got = sysread($fh, my $chunk, 65536);
    next if !defined $got && ($!{EAGAIN} || $!{EINTR});
    if (!$got) {
      stop_reading($fh);
      $run->{open}--;
      settle($id);
    } elsif ($which eq 'out' && $run->{streamed}) {
      answer($id, 'output', $chunk);
    } elsif (length($run->{$which} .= $chunk) > $MAX_OUTPUT && !$run->{why}) {
      $run->{why} = "$which maxBuffer length exceeded";
      kill 'TERM', $run->{pid};
    }
  }
  for my $fh (@{ $writable // [] }) {
    my $pipe = $pipe_of{fileno($fh) // -1} or next;
    my $id = $pipe->[0];
    my $run = $running{$id};
    my $wrote = syswrite($fh, $run->{input});
    next if !defined $wrote && ($!{EAGAIN} || $!{EINTR});
    # A command that does not read its input may close it first: what is left is dropped.
    substr($run->{input}, 0, $wrote // length $run->{input}) = '';
    if (!length $run->{input}) {
      stop_reading($fh);
      delete $run->{in};
    }
  }
  reap();
  end_past_time();
}
