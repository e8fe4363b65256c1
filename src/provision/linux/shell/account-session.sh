#!/bin/sh
# Berth's login hook (written by its shell component; docs/linux-driver.md, Isolation). PAM's
# pam_exec runs it as root when sshd opens a session: with "group", an account's session (SSH or
# SFTP) moves into the account's control group, so that suspension and removal end it with
# everything it starts; with "proc", in the session's own mount namespace (pam_namespace), a
# shell account's jail gets a /proc that shows the account its own processes alone, and MariaDB's
# socket. Any other
# user's session is left as it is. It fails, and so refuses the login, rather than let an
# account's session run outside its group.
set -eu
[ "${PAM_TYPE:-}" = open_session ] || exit 0
user=${PAM_USER:-}
case $user in '' | [!a-z]* | *[!a-z0-9]*) exit 0 ;; esac
[ "${#user}" -le 16 ] || exit 0
groups=" $(/usr/bin/id -nG -- "$user") "
case $groups in *" {{shell_group}} "* | *" {{sftp_group}} "*) ;; *) exit 0 ;; esac

case ${1:-} in
group)
  # The sshd process that opens the session is the parent of every process the session runs.
{{enter_groups}}
  ;;
proc)
  case $groups in *" {{shell_group}} "*) ;; *) exit 0 ;; esac
  # Only in a mount namespace of the session's own: never a mount in the system's.
  [ "$(/usr/bin/readlink /proc/self/ns/mnt)" != "$(/usr/bin/readlink /proc/1/ns/mnt)" ]
  home=$(/usr/bin/getent passwd -- "$user" | /usr/bin/cut -d: -f6)
  # The home and its proc are root's: no link the account planted can be there.
  [ -d "$home/proc" ] && [ ! -L "$home" ] && [ ! -L "$home/proc" ]
  [ "$(/usr/bin/stat -c %u -- "$home")" = 0 ] && [ "$(/usr/bin/stat -c %u -- "$home/proc")" = 0 ]
  /usr/bin/mount -t proc -o hidepid=invisible,nosuid,nodev,noexec proc "$home/proc"
  # MariaDB's socket where the jail's clients look for it, read-only (a socket still connects).
  mysqld={{mariadb_dir}}
  if [ -d "$mysqld" ]; then
    # Each check on its own line: under set -e a failed test inside an && list would not stop us.
    [ ! -L "$home/run" ] || exit 1
    /usr/bin/mkdir -p -m 0755 -- "$home$mysqld"
    [ ! -L "$home$mysqld" ] || exit 1
    [ "$(/usr/bin/stat -c %u -- "$home/run")" = 0 ] || exit 1
    /usr/bin/mount --bind -- "$mysqld" "$home$mysqld"
    /usr/bin/mount -o remount,bind,ro,nosuid,nodev,noexec -- "$home$mysqld"
  fi
  ;;
*) exit 1 ;;
esac
