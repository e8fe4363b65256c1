#!/usr/bin/perl
# Berth's PHP activator (activator.ts): holds every account's PHP socket, listening, while no
# PHP-FPM master of the account runs, and starts the master when the first request waits on it.
# An idle account then costs a socket, not a master of its own (about 10 MB each).
#
# One process for the server, root's, detached from Berth: it outlives a restart of Berth, and a
# request that comes meanwhile waits in its socket's queue. Berth speaks to it over a socket of its
# own (the first argument, in a directory root's alone), one JSON object a line:
#
#   {"id":1,"op":"hold","key":K,"path":P,"uid":U,"gid":G}  binds P (mode 0600, U's), listens
#   {"id":2,"op":"release","key":K}                     closes it, removes P if still its own
#   {"id":3,"op":"exec","key":K,"argv":[...],"env":{},"listen":L}
#                                                       starts argv with the socket as descriptor
#                                                       3, named to PHP-FPM by FPM_SOCKETS=L=3
#   {"id":4,"op":"drain","key":K}                       refuses what waits (a start that failed): the
#                                                       socket is replaced by a new one
#   {"id":8,"op":"stop","key":K}                        SIGQUIT to K's master (it ends gracefully)
#   {"id":5,"op":"list"}                                every socket held (whether its path is still
#                                                       its own), and its master
#   {"id":6,"op":"check"}                               how many it holds, whose path is no longer
#                                                       its socket, and which wait for a master
#                                                       (cheaper than a list)
#   {"id":7,"op":"listen"}                              this client is told of the events:
#   {"event":"ready","key":K}     a request waits on K's socket and no master runs for it
#   {"event":"exited","key":K,"pid":N}  K's master ended; its socket is watched again
#
# Each answer is {"id":N,...} or {"id":N,"error":"…"}. A socket is watched for one request at a
# time: once "ready" is said, not again until a master of it ends or the socket is drained.
#
# The sockets are watched with epoll (by syscall: Perl has no module of its own for it), whose wait
# costs what is ready, not what is watched: poll(2) over 10,000 sockets took 48 ms a wait, and
# every message from Berth is a wait.
use strict;
use warnings;
use Config;
use Errno qw(EAGAIN EINTR);
use Fcntl qw(:flock F_GETFL F_SETFL F_SETFD O_NONBLOCK);
use IO::Handle;
use JSON::PP;
use POSIX qw(WNOHANG setsid);
use Socket qw(AF_UNIX SOCK_STREAM pack_sockaddr_un);

my ($control) = @ARGV;
die "usage: activator.pl CONTROL-SOCKET\n" unless defined $control;
umask 077;
$SIG{PIPE} = 'IGNORE';
# One activator a control socket: a second one would take the path of the first's, which would hold
# its sockets and masters unreachable.
open(my $lock, '>', "$control.lock") or die "$control.lock: $!\n";
flock($lock, LOCK_EX | LOCK_NB) or die "another activator runs on $control\n";

# epoll_create1, epoll_ctl and epoll_pwait, and struct epoll_event (packed on x86-64), by
# architecture.
my %EPOLL = (x86_64 => [291, 233, 281, 'L Q'], aarch64 => [20, 21, 22, 'L x4 Q']);
my ($arch) = split /-/, $Config{archname};
my ($CREATE, $CTL, $WAIT, $EVENT) = @{ $EPOLL{$arch} or die "no epoll calls known on $arch\n" };
my $EVENT_SIZE = length pack($EVENT, 0, 0);
my ($EPOLL_CLOEXEC, $EPOLLIN, $ADD, $DEL) = (0x80000, 1, 1, 2);
my $epoll = syscall($CREATE, $EPOLL_CLOEXEC);
die "epoll_create1: $!\n" if $epoll < 0;

sub watch {
  my ($handle) = @_;
  my $fd = fileno $handle;
  syscall($CTL, $epoll, $ADD, $fd, pack($EVENT, $EPOLLIN, $fd)) == 0 or die "epoll_ctl: $!\n";
}

sub unwatch {
  my ($handle) = @_;
  my $fd = fileno($handle) // return;
  syscall($CTL, $epoll, $DEL, $fd, pack($EVENT, 0, 0));
}

# A child's end wakes the wait, through a pipe the handler writes to: a signal alone, come while a
# batch was being answered, would wait for the next event.
pipe(my $wake, my $waker) or die "pipe: $!\n";
fcntl($_, F_SETFL, fcntl($_, F_GETFL, 0) | O_NONBLOCK) for $wake, $waker;
$SIG{CHLD} = sub { syswrite($waker, 'x') };
watch($wake);

my $json = JSON::PP->new->canonical;
# key => { sock, path, dev, ino, pid (its master), armed (watched) }
my %held;
# What each watched descriptor is: a key's socket, by descriptor.
my %socket_of;
# fileno => { sock, buffer, listens }
my %clients;

socket(my $server, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
unlink $control;
bind($server, pack_sockaddr_un($control)) or die "bind $control: $!\n";
listen($server, 16) or die "listen: $!\n";
watch($server);

# A key's socket watched for a request (unless a master has it), or no longer.
sub arm {
  my ($key) = @_;
  my $entry = $held{$key};
  return if $entry->{armed} || $entry->{pid};
  $entry->{armed} = 1;
  watch($entry->{sock});
  $socket_of{ fileno $entry->{sock} } = $key;
}

sub disarm {
  my ($key) = @_;
  my $entry = $held{$key};
  return unless $entry->{armed};
  $entry->{armed} = 0;
  delete $socket_of{ fileno $entry->{sock} };
  unwatch($entry->{sock});
}

sub send_to {
  my ($client, $message) = @_;
  my $line = $json->encode($message) . "\n";
  while (length $line) {
    my $written = syswrite($client->{sock}, $line);
    if (!defined $written) {
      next if $! == EINTR;
      drop_client($client);
      return;
    }
    substr($line, 0, $written) = '';
  }
}

sub tell_listeners {
  my ($event) = @_;
  send_to($_, $event) for grep { $_->{listens} } values %clients;
}

sub drop_client {
  my ($client) = @_;
  my $fd = fileno($client->{sock}) // return;
  delete $clients{$fd};
  unwatch($client->{sock});
  close $client->{sock};
}

sub listening_socket {
  my ($path, $uid, $gid) = @_;
  # Made aside and renamed into place: the path is never a socket another may connect to first.
  my $aside = "$path.$$.new";
  unlink $aside;
  socket(my $sock, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
  my $made = eval {
    bind($sock, pack_sockaddr_un($aside)) or die "bind $aside: $!\n";
    # PHP-FPM's own backlog for its sockets.
    listen($sock, 511) or die "listen $aside: $!\n";
    chown($uid, $gid, $aside) or die "chown $aside: $!\n";
    chmod(0600, $aside) or die "chmod $aside: $!\n";
    rename($aside, $path) or die "rename to $path: $!\n";
    1;
  };
  if (!$made) {
    my $error = $@;
    unlink $aside;
    die $error;
  }
  my ($dev, $ino) = lstat $path;
  return ($sock, $dev, $ino);
}

# Whether the entry's path is still the socket it bound.
sub present {
  my ($entry) = @_;
  my ($dev, $ino) = lstat $entry->{path};
  return defined $dev && $dev == $entry->{dev} && $ino == $entry->{ino};
}

sub release {
  my ($key) = @_;
  return unless $held{$key};
  disarm($key);
  my $entry = delete $held{$key};
  unlink $entry->{path} if present($entry);
  close $entry->{sock};
}

# The key's socket replaced by a new one at its path: what waited on the old one is refused as it
# closes, and a process of the account that kept a copy of it (one a PHP worker started) keeps a
# socket no request reaches.
sub replace {
  my ($key) = @_;
  my $entry = $held{$key};
  my ($sock, $dev, $ino) = listening_socket(@$entry{qw(path uid gid)});
  disarm($key);
  close $entry->{sock};
  @$entry{qw(sock dev ino)} = ($sock, $dev, $ino);
}

sub start_master {
  my ($key, $argv, $env, $listen) = @_;
  my $entry = $held{$key};
  disarm($key);
  my $pid = fork;
  die "fork: $!\n" unless defined $pid;
  if ($pid == 0) {
    eval {
      $SIG{PIPE} = 'DEFAULT';
      $SIG{CHLD} = 'DEFAULT';
      setsid();
      open(STDIN, '<', '/dev/null');
      open(STDOUT, '>', '/dev/null');
      open(STDERR, '>', '/dev/null');
      POSIX::dup2(fileno($entry->{sock}), 3) // die;
      open(my $three, '<&=', 3) or die;
      fcntl($three, F_SETFD, 0);
      %ENV = (%$env, FPM_SOCKETS => "$listen=3");
      exec { $argv->[0] } @$argv;
    };
    POSIX::_exit(127);
  }
  $entry->{pid} = $pid;
  return $pid;
}

sub answer {
  my ($request) = @_;
  my $op = $request->{op} // '';
  my $key = $request->{key};
  my $entry = defined $key ? $held{$key} : undef;
  if ($op eq 'hold') {
    my ($path, $uid, $gid) = @$request{qw(path uid gid)};
    return {} if $entry && $entry->{path} eq $path && $entry->{uid} == $uid && $entry->{gid} == $gid
      && present($entry);
    my ($sock, $newdev, $newino) = listening_socket($path, $uid, $gid);
    if ($entry) {
      disarm($key);
      # Held at another path before: that path goes.
      unlink $entry->{path} if $entry->{path} ne $path && present($entry);
      close $entry->{sock};
      # Its master serves a socket no request reaches now: it ends (gracefully), and the next
      # request starts one on the new socket.
      kill 'QUIT', $entry->{pid} if $entry->{pid};
    }
    $held{$key} = {
      sock => $sock, path => $path, uid => $uid, gid => $gid, dev => $newdev, ino => $newino,
      pid => $entry ? $entry->{pid} : undef, armed => 0,
    };
    arm($key);
    return {};
  }
  if ($op eq 'release') { release($key); return {} }
  if ($op eq 'exec') {
    die "no socket is held for $key\n" unless $entry;
    die "a master of $key runs: $entry->{pid}\n" if $entry->{pid};
    return { pid => start_master($key, @$request{qw(argv env listen)}) };
  }
  if ($op eq 'drain') {
    die "no socket is held for $key\n" unless $entry;
    replace($key) unless $entry->{pid} || $entry->{armed};
    arm($key);
    return {};
  }
  if ($op eq 'stop') {
    # Its own child alone: a pid it has not reaped is no other process's.
    kill 'QUIT', $entry->{pid} if $entry && $entry->{pid};
    return {};
  }
  if ($op eq 'list') {
    my %list;
    for my $key (keys %held) {
      my $entry = $held{$key};
      $list{$key} = {
        path => $entry->{path},
        pid => $entry->{pid},
        waiting => ($entry->{armed} || $entry->{pid}) ? JSON::PP::false : JSON::PP::true,
        present => present($entry) ? JSON::PP::true : JSON::PP::false,
      };
    }
    return { held => \%list };
  }
  if ($op eq 'check') {
    my @absent = grep { !present($held{$_}) } keys %held;
    my @waiting = grep { !$held{$_}{armed} && !$held{$_}{pid} } keys %held;
    return { held => scalar(keys %held), absent => \@absent, waiting => \@waiting };
  }
  die "unknown operation: $op\n";
}

sub serve {
  my ($client) = @_;
  my $read = sysread($client->{sock}, my $chunk, 65536);
  return if !defined $read && ($! == EINTR || $! == EAGAIN);
  return drop_client($client) unless $read;
  $client->{buffer} .= $chunk;
  while ($client->{buffer} =~ s/^([^\n]*)\n//) {
    my $request = eval { $json->decode($1) };
    next unless ref $request eq 'HASH';
    if (($request->{op} // '') eq 'listen') {
      $client->{listens} = 1;
      send_to($client, { id => $request->{id} });
      # What came while no one listened.
      for my $key (sort keys %held) {
        my $entry = $held{$key};
        send_to($client, { event => 'ready', key => $key }) unless $entry->{armed} || $entry->{pid};
      }
      next;
    }
    my $answer = eval { answer($request) };
    if (!defined $answer) {
      my $error = $@ || 'failed';
      chomp $error;
      $answer = { error => $error };
    }
    send_to($client, { %$answer, id => $request->{id} });
  }
}

sub reap {
  while ((my $pid = waitpid(-1, WNOHANG)) > 0) {
    for my $key (keys %held) {
      my $entry = $held{$key};
      next unless ($entry->{pid} // 0) == $pid;
      $entry->{pid} = undef;
      arm($key);
      tell_listeners({ event => 'exited', key => $key, pid => $pid });
    }
  }
}

my $events = "\0" x ($EVENT_SIZE * 64);
while (1) {
  # SIGCHLD ends the wait early (EINTR): its master is reaped below.
  my $count = syscall($WAIT, $epoll, $events, 64, 5000, 0, 8);
  reap();
  for my $i (0 .. $count - 1) {
    my (undef, $fd) = unpack($EVENT, substr($events, $i * $EVENT_SIZE, $EVENT_SIZE));
    if ($fd == fileno $wake) {
      1 while sysread($wake, my $drained, 512);
    } elsif ($fd == fileno $server) {
      if (accept(my $sock, $server)) {
        $sock->autoflush(1);
        $clients{ fileno $sock } = { sock => $sock, buffer => '', listens => 0 };
        watch($sock);
      }
    } elsif (my $client = $clients{$fd}) {
      serve($client);
    } elsif (defined(my $key = $socket_of{$fd})) {
      # Told once: watched again when its master ends or it is drained.
      disarm($key);
      tell_listeners({ event => 'ready', key => $key });
    }
  }
}
