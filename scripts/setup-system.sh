#!/bin/sh
# Installs the system tools the tests need, when they are missing, from Debian's packages:
#   chromium   — the portal's browser tests drive it with playwright-core (never a downloaded browser)
#   postgresql — the store and operation tests run a second time on a throwaway PostgreSQL cluster
#   nginx, bind9-utils — the linux driver's tests check server blocks with nginx -t and zones with
#                named-checkzone
#   php-cli, php-curl — the WHMCS module's tests call it with PHP, as WHMCS does
#   php-fpm, bind9, pebble, curl, procps — berth sandbox (CONTRACT §13) runs PHP-FPM, BIND and
#                Pebble (the ACME test server); its test fetches the sites with curl; the linux
#                driver signals PHP-FPM with pkill
#   postfix, dovecot-imapd, dovecot-lmtpd, dovecot-sqlite, opendkim, openssh-server, openssh-client,
#   jailkit, rsync — the sandbox's mail and SSH; its test reads mail with curl and logs in with
#              ssh/sftp (Dovecot reads Berth's logins from SQLite)
#   cron       — the sandbox runs Debian's cron daemon, which runs the accounts' cron jobs
#   tini       — the sandbox's first process, reaping orphans as init does
#   systemd    — its systemd-analyze checks deploy/berth.service (verify, and its exposure rating)
#   logrotate  — the sandbox's test rotates the sites' logs with Berth's logrotate file
#   publicsuffix — the Public Suffix List, which createacct and add_domain read to refuse a public
#                suffix (co.uk) as a domain
#   mariadb-server, mariadb-client — the accounts' databases (CONTRACT §14); tests connect with mysql
#   php-mysql, php-gd, php-xml, php-mbstring, php-zip, php-intl — the PHP extensions common
#                applications need (php-curl is above)
#   pure-ftpd  — the accounts' FTP logins over explicit TLS
#   mlmmj      — the accounts' mailing lists
#   roundcube-core, roundcube-sqlite3 — webmail, served by nginx through its own PHP-FPM pool
#   restic     — the accounts' backups (CONTRACT §15)
#   wordpress, wordpress-theme-twentytwentythree — a well-known PHP application, which a sandbox
#                test installs on an account as its holder would
# Needs root for apt-get; run by `npm test` (scripts/test.sh) before the tests.
set -eu

missing=""
[ -x /usr/bin/chromium ] || missing="$missing chromium"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
[ -x /usr/sbin/nginx ] || missing="$missing nginx"
[ -x /usr/bin/named-checkzone ] || missing="$missing bind9-utils"
[ -x /usr/bin/php ] || missing="$missing php-cli"
{ [ -x /usr/bin/php ] && /usr/bin/php -m | grep -qx curl; } || missing="$missing php-curl"
ls /usr/sbin/php-fpm* >/dev/null 2>&1 || missing="$missing php-fpm"
[ -x /usr/sbin/named ] || missing="$missing bind9"
[ -x /usr/bin/pebble ] || missing="$missing pebble"
[ -x /usr/bin/curl ] || missing="$missing curl"
[ -x /usr/bin/pkill ] || missing="$missing procps"
[ -x /usr/sbin/postfix ] || missing="$missing postfix"
[ -x /usr/lib/dovecot/imap ] || missing="$missing dovecot-imapd"
[ -x /usr/lib/dovecot/lmtp ] || missing="$missing dovecot-lmtpd"
[ -f /usr/lib/dovecot/modules/libdriver_sqlite.so ] || missing="$missing dovecot-sqlite"
[ -x /usr/sbin/opendkim ] || missing="$missing opendkim"
[ -x /usr/sbin/sshd ] || missing="$missing openssh-server"
[ -x /usr/bin/sftp ] || missing="$missing openssh-client"
[ -x /usr/sbin/jk_init ] || missing="$missing jailkit"
[ -x /usr/bin/rsync ] || missing="$missing rsync"
[ -x /usr/sbin/cron ] || missing="$missing cron"
[ -x /usr/bin/tini ] || missing="$missing tini"
[ -x /usr/bin/systemd-analyze ] || missing="$missing systemd"
[ -x /usr/sbin/logrotate ] || missing="$missing logrotate"
[ -f /usr/share/publicsuffix/public_suffix_list.dat ] || missing="$missing publicsuffix"
[ -x /usr/sbin/mariadbd ] || missing="$missing mariadb-server"
[ -x /usr/bin/mariadb ] || missing="$missing mariadb-client"
for ext in mysqli pdo_mysql gd xml mbstring zip intl; do
  { [ -x /usr/bin/php ] && /usr/bin/php -m | grep -qx "$ext"; } || missing="$missing php-$(echo "$ext" | sed 's/^mysqli$/mysql/; s/^pdo_mysql$/mysql/')"
done
[ -x /usr/sbin/pure-ftpd ] || missing="$missing pure-ftpd"
[ -x /usr/bin/mlmmj-receive ] || missing="$missing mlmmj"
[ -f /usr/share/roundcube/index.php ] || missing="$missing roundcube-core roundcube-sqlite3"
[ -x /usr/bin/restic ] || missing="$missing restic"
[ -f /usr/share/wordpress/wp-settings.php ] || missing="$missing wordpress"
[ -d /usr/share/wordpress/wp-content/themes/twentytwentythree ] || missing="$missing wordpress-theme-twentytwentythree"
[ -x /usr/bin/btrfs ] && [ -x /usr/sbin/mkfs.btrfs ] || missing="$missing btrfs-progs"

[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-system: missing Debian packages:$missing; install them as root (apt-get install$missing)" >&2
  exit 1
fi
echo "== installing Debian packages:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Installing a service must not start it on this machine: the sandbox runs its own.
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
