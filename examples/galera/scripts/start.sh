#!/bin/sh
# start.sh CNF [--wsrep-new-cluster] — the foreground command of a Galera
# member (sut.command; with --wsrep-new-cluster, sut.bootstrap.command).
# 1. Creates the run dir of the socket and pid file and the tmpdir, owned
#    by the cnf's user.
# 2. After a crash grastate.dat says seqno -1: the member's position is
#    recovered from InnoDB (mariadbd --wsrep-recover) and written back, so
#    the member rejoins by IST (only the writesets it missed) instead of a
#    full state transfer — what galera_recovery does for Debian's unit.
# 3. As the bootstrap member it sets safe_to_bootstrap: 1. Galera refuses a
#    bootstrap from a member that was not the last to leave; dstgen only
#    bootstraps the member whose rank (rank.sh) is the highest, and refuses
#    any other, so that check is made before this script runs.
# Then it becomes mariadbd (exec), so signals reach the server.
set -u
# mariadbd is in /usr/sbin, not on a non-root login PATH.
PATH=$PATH:/usr/sbin:/sbin
cnf=${1:?usage: start.sh CNF [--wsrep-new-cluster]}
shift
cnf_get() { awk -v k="$1" '{ sub(/#.*/, "") } $1 == k && $2 == "=" { sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit }' "$cnf"; }
dd=$(cnf_get datadir)
run=$(dirname "$(cnf_get pid-file)")
u=$(cnf_get user)
[ -n "$u" ] || u=mysql
# own PATH: hand PATH to the server's user (only root can, and must).
own() { [ "$(id -u)" != 0 ] || chown "$u:" "$1"; }
mkdir -p "$run" && own "$run"
tmp=$(cnf_get tmpdir)
if [ -n "$tmp" ]; then mkdir -p "$tmp" && own "$tmp"; fi
g=$dd/grastate.dat
if [ -f "$g" ] && [ "$(awk '$1 == "seqno:" { print $2 }' "$g")" = -1 ] && [ -e "$dd/ibdata1" ]; then
	log=$run/wsrep-recover.log
	rm -f "$log"
	if mariadbd --defaults-file="$cnf" --wsrep-recover --log-error="$log" >/dev/null 2>&1; then
		pos=$(grep -a 'WSREP: Recovered position:' "$log" | tail -n 1 | sed 's/.*Recovered position: *//')
		case "$pos" in
		00000000-0000-0000-0000-000000000000:* | '') ;;
		*:*)
			safe=$(awk '$1 == "safe_to_bootstrap:" { print $2 }' "$g")
			printf '# GALERA saved state\nversion: 2.1\nuuid:    %s\nseqno:   %s\nsafe_to_bootstrap: %s\n' "${pos%:*}" "${pos##*:}" "${safe:-0}" >"$g.dstgen" &&
				own "$g.dstgen" && mv "$g.dstgen" "$g"
			echo "start.sh: recovered position $pos into grastate.dat" >&2
			;;
		esac
	else
		echo "start.sh: mariadbd --wsrep-recover failed; starting without a recovered position" >&2
	fi
fi
for a in "$@"; do
	if [ "$a" = --wsrep-new-cluster ] && [ -f "$g" ]; then
		sed 's/^safe_to_bootstrap:.*/safe_to_bootstrap: 1/' "$g" >"$g.dstgen" && own "$g.dstgen" && mv "$g.dstgen" "$g"
	fi
done
exec mariadbd --defaults-file="$cnf" "$@"
