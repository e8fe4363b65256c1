#!/bin/sh
# Berth's cron job runner (written by its cron component; docs/linux-driver.md, Cron jobs). Debian's
# cron runs it as root, from the lines of /etc/cron.d/berth-<user>, with an account's user and a
# job's id, never a command. It reads the job's command from the account's root-only jobs file,
# does nothing while the account is suspended, moves itself into the account's control group, and
# runs the command with /bin/sh as the account's user and group, in the home, inside the account's
# jail: for a shell account the jail its SSH shell has (with a /proc of its own showing the account
# alone), for any other a jail built the same way for the run in a mount namespace of its own. The
# job's output is discarded. It fails rather than run a command anywhere else.
set -eu
umask 077
PATH=/usr/sbin:/usr/bin:/sbin:/bin

user=${2:-}
id=${3:-}
case $user in '' | [!a-z]* | *[!a-z0-9]*) exit 1 ;; esac
[ "${#user}" -le 16 ]
case $id in '' | *[!a-z2-7]*) exit 1 ;; esac
[ "${#id}" -eq 10 ]

jobs={{jobs_dir}}/$user
[ -f "$jobs" ] && [ ! -L "$jobs" ] || exit 0
command=$(sed -n "s/^$id //p" "$jobs")
[ -n "$command" ] || exit 0
groups=" $(id -nG -- "$user") "
case $groups in *" {{suspended_group}} "*) exit 0 ;; esac
entry=$(getent passwd -- "$user")
uid=$(echo "$entry" | cut -d: -f3)
gid=$(echo "$entry" | cut -d: -f4)
home=$(echo "$entry" | cut -d: -f6)
case $uid$gid in '' | *[!0-9]*) exit 1 ;; esac
[ "$uid" -ne 0 ] && [ "$gid" -ne 0 ]
# The home is root's (the customer cannot put a link where a mount goes), never a link itself.
case $home in /*) ;; *) exit 1 ;; esac
[ -d "$home" ] && [ ! -L "$home" ] && [ "$(stat -c %u -- "$home")" = 0 ]

case ${1:-} in
run)
  # Every process of the job is the account's: suspension and removal end it, its limits apply.
{{enter_groups}}
  # Confined (no btrfs subvolume, outside the quota, can be made), with SysV IPC and POSIX message
  # queues of the run's own: no job uses up what other accounts' processes share.
  exec {{confine}} --run unshare --mount --ipc --propagation private -- /bin/sh "$0" jail "$user" "$id"
  ;;
jail)
  # Only in a mount namespace of the run's own: never a mount in the system's.
  [ "$(readlink /proc/self/ns/mnt)" != "$(readlink /proc/1/ns/mnt)" ]
  # What the jail is made of is readable by the account; the job makes files as a login would.
  umask 022
  case $groups in
  *" {{shell_group}} "*)
    # The account's own jail, as its SSH sessions see it (shell/account-session.sh).
    root=$home
    [ -d "$root/proc" ] && [ ! -L "$root/proc" ] && [ "$(stat -c %u -- "$root/proc")" = 0 ]
    ;;
  *)
    # A jail like a shell account's, from the same template, in a tmpfs seen by this run alone.
    template={{jail_template}}
    root={{jail_root}}
    mkdir -p -m 0755 "$root"
    mount -t tmpfs -o mode=0755,nosuid,nodev,size=16m berth-cron "$root"
    for name in {{jail_entries}}; do
      if [ -L "$template/$name" ]; then
        ln -s "$(readlink "$template/$name")" "$root/$name"
      elif [ -d "$template/$name" ] && [ "$name" != etc ]; then
        mkdir "$root/$name"
        mount --bind "$template/$name" "$root/$name"
        mount -o remount,bind,ro,nosuid "$root/$name"
      elif [ -d "$template/$name" ]; then
        cp -a "$template/etc" "$root/etc"
      fi
    done
    mkdir -p "$root/etc"
    printf 'root:x:0:0:root:/root:/bin/bash\n%s:x:%s:%s::%s:/bin/bash\n' "$user" "$uid" "$gid" "$home" >"$root/etc/passwd"
    printf 'root:x:0:\n%s:x:%s:\n' "$user" "$gid" >"$root/etc/group"
    chmod 0644 "$root/etc/passwd" "$root/etc/group"
    # The whole home at its own path (the home is root's: the account cannot swap it), and its
    # entries at the top as its SFTP sessions see them (public_html is /public_html, as in a shell
    # account's jail) as links into it: a link resolves inside the jail, so an entry the account
    # turns into a link to /etc or another home reaches only the jail's own. Nothing is bound by
    # a path the account could change.
    mkdir -p "$root/proc" "$root$home"
    mount --bind "$home" "$root$home"
    mount -o remount,bind,nosuid,nodev "$root$home"
    for entry in "$home"/* "$home"/.[!.]*; do
      name=${entry##*/}
      case " {{jail_entries}} proc home run " in *" $name "*) continue ;; esac
      [ -e "$entry" ] || [ -L "$entry" ] || continue
      ln -s "$home/$name" "$root/$name"
    done
    ;;
  esac
  mount -t proc -o hidepid=invisible,nosuid,nodev,noexec proc "$root/proc"
  # MariaDB's socket where the job's clients look for it, read-only (a socket still connects).
  mysqld={{mariadb_dir}}
  if [ -d "$mysqld" ]; then
    # Each check on its own line: under set -e a failed test inside an && list would not stop us.
    [ ! -L "$root/run" ] || exit 1
    mkdir -p -m 0755 -- "$root$mysqld"
    [ ! -L "$root$mysqld" ] || exit 1
    [ "$(stat -c %u -- "$root/run")" = 0 ] || exit 1
    mount --bind -- "$mysqld" "$root$mysqld"
    mount -o remount,bind,ro,nosuid,nodev,noexec -- "$root$mysqld"
  fi
  exec /usr/bin/env -i HOME="$home" USER="$user" LOGNAME="$user" SHELL=/bin/sh \
    PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
    /usr/sbin/chroot --userspec="$uid:$gid" --groups="$gid" -- "$root" \
    /bin/sh -c 'cd / && exec /bin/sh -c "$1"' berth-cron "$command" \
    </dev/null >/dev/null 2>&1
  ;;
*) exit 1 ;;
esac
