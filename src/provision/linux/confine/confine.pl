#!/usr/bin/env -S PERL_BADLANG=0 /usr/bin/perl
# Berth's confinement of an account's processes (written by Berth; docs/linux-driver.md, Quotas and
# Isolation). It installs a seccomp filter that every process it then runs inherits and cannot
# remove (with no_new_privs, unless it runs as root): no btrfs subvolume or snapshot can be made
# (BTRFS_IOC_SUBVOL_CREATE, _V2, BTRFS_IOC_SNAP_CREATE, _V2 fail with EPERM), since a new subvolume
# would be outside the account's qgroup, so outside its quota. System calls of any other
# architecture than the server's (i386's int 0x80, x32) end the process. It uses no module: it runs
# inside a shell account's jail too, where Perl has none, nor the locale an SSH client names
# (PERL_BADLANG=0: no warning of it at every login).
#
#   confine --run PROGRAM ARG...   runs PROGRAM so confined (PHP-FPM's master, a cron job's run)
#   confine --run --group DIR... PROGRAM ARG...
#                                  the same, first moving itself into each control group DIR (the
#                                  account's), so that nothing PROGRAM forks starts outside them
#   confine [ARG...]               as an account's login shell (sshd runs it after chroot):
#                                  also refuses to make SysV IPC objects and POSIX message queues,
#                                  which every process outside an IPC namespace of its own shares,
#                                  then runs {{shell}} (a login shell when given no argument)
my $shell = '{{shell}}';

my ($arch, $ioctl, $prctl, $x32) = ({{audit_arch}}, {{ioctl_nr}}, {{prctl_nr}}, {{x32}});
# shmget, semget, msgget and mq_open on this architecture.
my @ipc = ({{ipc_nrs}});
my @requests = (0x5000940e, 0x50009418, 0x50009401, 0x50009417);

my $login = !(@ARGV && $ARGV[0] eq '--run');
shift @ARGV unless $login;
my @groups;
while (!$login && @ARGV >= 2 && $ARGV[0] eq '--group') {
  shift @ARGV;
  push @groups, shift @ARGV;
}
die "confine: nothing to run\n" if !$login && !@ARGV;

# struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }: BPF over struct seccomp_data, whose nr
# is at 0, arch at 4, and args[1] at 24 (its low 32 bits on a little-endian server: the kernel
# takes ioctl's request as a 32-bit number, so the high half is never looked at).
my ($LD, $JEQ, $JGE, $RET) = (0x20, 0x15, 0x35, 0x06);
my ($ALLOW, $KILL, $EPERM) = (0x7fff0000, 0x80000000, 0x00050001);
my @calls = $login ? @ipc : ();
my @prog;
push @prog, [$LD, 0, 0, 4];
push @prog, [$JEQ, 1, 0, $arch];
push @prog, [$RET, 0, 0, $KILL];
push @prog, [$LD, 0, 0, 0];
if ($x32) {
  push @prog, [$JGE, 0, 1, 0x40000000];
  push @prog, [$RET, 0, 0, $KILL];
}
for my $nr (@calls) {
  push @prog, [$JEQ, 0, 1, $nr];
  push @prog, [$RET, 0, 0, $EPERM];
}
push @prog, [$JEQ, 1, 0, $ioctl];
push @prog, [$RET, 0, 0, $ALLOW];
push @prog, [$LD, 0, 0, 24];
for my $i (0 .. $#requests) {
  # To the EPERM return, past the checks left and the ALLOW.
  push @prog, [$JEQ, scalar(@requests) - $i, 0, $requests[$i]];
}
push @prog, [$RET, 0, 0, $ALLOW];
push @prog, [$RET, 0, 0, $EPERM];

my $filter = join '', map { pack 'S C C L', @$_ } @prog;
my $fprog = pack 'S x![P] P', scalar(@prog), $filter;
# PR_SET_SECCOMP with SECCOMP_MODE_FILTER. Root (PHP-FPM's master, the cron runner) has
# CAP_SYS_ADMIN, with which the kernel takes the filter without no_new_privs: set-id programs
# still gain their ids under it (postdrop's group postdrop, which PHP's mail() needs), filter
# and all. Anyone else (a login shell) sets PR_SET_NO_NEW_PRIVS first, as the kernel requires.
sub filter { syscall($prctl, 22, 2, $fprog, 0, 0) == 0 }
unless ($> == 0 && filter()) {
  syscall($prctl, 38, 1, 0, 0, 0) == 0 or die "confine: no_new_privs: $!\n";
  filter() or die "confine: seccomp filter: $!\n";
}

delete $ENV{PERL_BADLANG};
if ($login) {
  $ENV{SHELL} = $shell;
  my ($name) = $shell =~ m{([^/]+)$};
  exec {$shell} @ARGV ? ($name, @ARGV) : ("-$name");
  die "confine: $shell: $!\n";
}
# 0 is the writer itself, in cgroup v1 and v2.
for my $dir (@groups) {
  open(my $procs, '>', "$dir/cgroup.procs") or die "confine: $dir: $!\n";
  print {$procs} "0\n";
  close($procs) or die "confine: $dir: $!\n";
}
exec {$ARGV[0]} @ARGV;
die "confine: $ARGV[0]: $!\n";
