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
#   {"id":4,"op":"drain","key":K}                       refuses what waits (a start that failed)
#   {"id":5,"op":"list"}                                every socket held (whether its path is still
#                                                       its own), and its master
#   {"id":6,"op":"listen"}                              this client is told of the events:
#   {"event":"ready","key":K}     a request waits on K's socket and no master runs for it
#   {"event":"exited","key":K,"pid":N}  K's master ended; its socket is watched again
#
# Each answer is {"id":N,...} or {"id":N,"error":"…"}. A socket is watched for one request at a
# time: once "ready" is said, not again until a master of it ends or the socket is drained.
use strict;
use warnings;
use Errno qw(EAGAIN EINTR EWOULDBLOCK);
use Fcntl qw(F_GETFL F_SETFL F_SETFD O_NONBLOCK);
use IO::Handle;
use IO::Poll qw(POLLIN POLLHUP POLLERR);
use JSON::PP;
use POSIX qw(WNOHANG setsid);
use Socket qw(AF_UNIX SOCK_STREAM pack_sockaddr_un);

my ($control) = @ARGV;
die "usage: activator.pl CONTROL-SOCKET\n" unless defined $control;
umask 077;
$SIG{PIPE} = 'IGNORE';
# A child's end wakes the poll below.
$SIG{CHLD} = sub { };

my $json = JSON::PP->new->canonical;
# key => { sock, path, dev, ino, pid (its master), armed (watched) }
my %held;
# fileno => { sock, buffer, listens }
my %clients;

socket(my $server, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
unlink $control;
bind($server, pack_sockaddr_un($control)) or die "bind $control: $!\n";
listen($server, 16) or die "listen: $!\n";

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
  delete $clients{ fileno($client->{sock}) // -1 };
  close $client->{sock};
}

sub listening_socket {
  my ($path, $uid, $gid) = @_;
  # Made aside and renamed into place: the path is never a socket another may connect to first.
  my $aside = "$path.$$.new";
  unlink $aside;
  socket(my $sock, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n";
  bind($sock, pack_sockaddr_un($aside)) or die "bind $aside: $!\n";
  # PHP-FPM's own backlog for its sockets.
  listen($sock, 511) or die "listen $aside: $!\n";
  chown($uid, $gid, $aside) or die "chown $aside: $!\n";
  chmod(0600, $aside) or die "chmod $aside: $!\n";
  rename($aside, $path) or die "rename to $path: $!\n";
  my ($dev, $ino) = lstat $path;
  return ($sock, $dev, $ino);
}

sub release {
  my ($key) = @_;
  my $entry = delete $held{$key} or return;
  my ($dev, $ino) = lstat $entry->{path};
  unlink $entry->{path} if defined $dev && $dev == $entry->{dev} && $ino == $entry->{ino};
  close $entry->{sock};
}

sub drain {
  my ($entry) = @_;
  my $flags = fcntl($entry->{sock}, F_GETFL, 0);
  fcntl($entry->{sock}, F_SETFL, $flags | O_NONBLOCK);
  while (accept(my $connection, $entry->{sock})) { close $connection }
  # PHP-FPM's workers accept blocking: a descriptor left non-blocking would end them.
  fcntl($entry->{sock}, F_SETFL, $flags & ~O_NONBLOCK);
}

sub start_master {
  my ($entry, $argv, $env, $listen) = @_;
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
  $entry->{armed} = 0;
  return $pid;
}

sub answer {
  my ($request) = @_;
  my $op = $request->{op} // '';
  my $key = $request->{key};
  my $entry = defined $key ? $held{$key} : undef;
  if ($op eq 'hold') {
    my ($dev, $ino) = lstat $request->{path};
    return {} if $entry && $entry->{path} eq $request->{path} && defined $dev && $dev == $entry->{dev}
      && $ino == $entry->{ino};
    my ($sock, $newdev, $newino) = listening_socket(@$request{qw(path uid gid)});
    if ($entry) {
      close $entry->{sock};
      # Its master serves a socket no request reaches now: it ends (gracefully), and the next
      # request starts one on the new socket.
      kill 'QUIT', $entry->{pid} if $entry->{pid};
    }
    $held{$key} = {
      sock => $sock, path => $request->{path}, dev => $newdev, ino => $newino,
      pid => $entry ? $entry->{pid} : undef, armed => 1,
    };
    return {};
  }
  if ($op eq 'release') { release($key); return {} }
  if ($op eq 'exec') {
    die "no socket is held for $key\n" unless $entry;
    die "a master of $key runs: $entry->{pid}\n" if $entry->{pid};
    return { pid => start_master($entry, @$request{qw(argv env listen)}) };
  }
  if ($op eq 'drain') {
    die "no socket is held for $key\n" unless $entry;
    drain($entry) unless $entry->{pid};
    $entry->{armed} = 1 unless $entry->{pid};
    return {};
  }
  if ($op eq 'list') {
    my %list;
    for my $key (keys %held) {
      my $entry = $held{$key};
      my ($dev, $ino) = lstat $entry->{path};
      $list{$key} = {
        path => $entry->{path},
        pid => $entry->{pid},
        waiting => ($entry->{armed} || $entry->{pid}) ? JSON::PP::false : JSON::PP::true,
        present => (defined $dev && $dev == $entry->{dev} && $ino == $entry->{ino}) ? JSON::PP::true : JSON::PP::false,
      };
    }
    return { held => \%list };
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
      $entry->{armed} = 1;
      tell_listeners({ event => 'exited', key => $key, pid => $pid });
    }
  }
}

while (1) {
  my $poll = IO::Poll->new;
  $poll->mask($server => POLLIN);
  $poll->mask($_->{sock} => POLLIN) for values %clients;
  my %watched;
  for my $key (keys %held) {
    my $entry = $held{$key};
    next unless $entry->{armed} && !$entry->{pid};
    $poll->mask($entry->{sock} => POLLIN);
    $watched{$key} = $entry->{sock};
  }
  $poll->poll(5);
  reap();
  if ($poll->events($server)) {
    if (accept(my $sock, $server)) {
      $sock->autoflush(1);
      $clients{ fileno $sock } = { sock => $sock, buffer => '', listens => 0 };
    }
  }
  for my $client (values %clients) {
    serve($client) if $poll->events($client->{sock});
  }
  for my $key (sort keys %watched) {
    my $entry = $held{$key};
    # Released, or held anew, or started while the clients were answered.
    next unless $entry && $entry->{sock} == $watched{$key} && $entry->{armed} && !$entry->{pid};
    next unless $poll->events($watched{$key});
    $entry->{armed} = 0;
    tell_listeners({ event => 'ready', key => $key });
  }
}
