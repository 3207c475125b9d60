#!/bin/sh
# init.sh CNF PASSWORD_FILE — sut.init of the Galera example: initialises
# an empty data dir (mariadb-install-db) with the workload's login, user
# dstgen@'%' with all rights on the database dstgen, whose password is the
# content of PASSWORD_FILE (the secret dstgen_db that dstgen deploy
# installs on every host). The password is never printed and never on a
# command line: it goes into a 0600 SQL file that mariadb-install-db runs
# (--extra-file) and that is removed afterwards.
# Every member runs it on its first start; a joiner's tables are then
# replaced by its donor's (state transfer), which hold the same login.
set -eu
# mariadb-install-db runs mariadbd from /usr/sbin.
PATH=$PATH:/usr/sbin:/sbin
cnf=${1:?usage: init.sh CNF PASSWORD_FILE}
pwf=${2:?usage: init.sh CNF PASSWORD_FILE}
[ -r "$pwf" ] || { echo "init.sh: cannot read the password file $pwf (sut.secrets installs it)" >&2; exit 1; }
pw=$(cat "$pwf")
case $pw in
'' | *[!A-Za-z0-9]*) echo "init.sh: $pwf must hold letters and digits only" >&2; exit 1 ;;
esac
# The server's own tmpdir (galera.cnf): mariadbd does not create it, and
# mariadb-install-db below runs before start.sh could have made it.
cnf_get() { awk -v k="$1" '{ sub(/#.*/, "") } $1 == k && $2 == "=" { sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit }' "$cnf"; }
tmp=$(cnf_get tmpdir)
if [ -n "$tmp" ]; then
	mkdir -p "$tmp"
	if [ "$(id -u)" = 0 ]; then
		u=$(cnf_get user)
		chown "${u:-mysql}:" "$tmp"
	fi
fi
umask 077
sql=$(mktemp)
trap 'rm -f "$sql"' EXIT
# printf is the shell's builtin here: the password is in no argv.
# FLUSH PRIVILEGES first: mariadb-install-db runs the file with the grant
# tables not loaded (--skip-grant-tables), where CREATE USER is refused.
printf "FLUSH PRIVILEGES;\nCREATE DATABASE IF NOT EXISTS dstgen;\nCREATE USER IF NOT EXISTS 'dstgen'@'%%' IDENTIFIED BY '%s';\nGRANT ALL ON dstgen.* TO 'dstgen'@'%%';\n" "$pw" >"$sql"
mariadb-install-db --defaults-file="$cnf" --skip-test-db --extra-file="$sql"
