#!/bin/sh
# rank.sh CNF — sut.bootstrap.rank of the Galera example: prints how far
# this member's data has got, so dstgen bootstraps the most advanced one
# after a whole-cluster stop or crash (docs/env-yml.md §7.1 in dstgen).
# Runs only while no member runs. One line on stdout:
#   57 seqno=57 safe_to_bootstrap=0 source=grastate.dat
#   -1 fresh: empty data dir
#   refuse: <reason>            (this member must not bootstrap)
# The seqno is grastate.dat's; a member that crashed has seqno -1 there,
# and then `mariadbd --wsrep-recover` reads its last committed position
# from InnoDB (it runs InnoDB's crash recovery, as Galera's own
# galera_recovery does, and needs the member stopped).
set -u
# mariadbd is in /usr/sbin, not on a non-root login PATH.
PATH=$PATH:/usr/sbin:/sbin
cnf=${1:?usage: rank.sh CNF}
cnf_get() { awk -v k="$1" '{ sub(/#.*/, "") } $1 == k && $2 == "=" { sub(/^[^=]*=[ \t]*/, ""); sub(/[ \t]+$/, ""); print; exit }' "$cnf"; }
[ -r "$cnf" ] || { echo "refuse: cannot read $cnf"; exit 0; }
dd=$(cnf_get datadir)
run=$(dirname "$(cnf_get pid-file)")
u=$(cnf_get user)
[ -n "$u" ] || u=mysql
# own PATH: hand PATH to the server's user (only root can, and must).
own() { [ "$(id -u)" != 0 ] || chown "$u:" "$1"; }
g=$dd/grastate.dat
if [ -z "$(ls -A "$dd" 2>/dev/null)" ]; then
	echo "-1 fresh: empty data dir"
	exit 0
fi
seqno=-1 safe=0
if [ -r "$g" ]; then
	seqno=$(awk '$1 == "seqno:" { print $2 }' "$g")
	safe=$(awk '$1 == "safe_to_bootstrap:" { print $2 }' "$g")
fi
case "$seqno" in
'' | *[!0-9-]*) echo "refuse: grastate.dat has an unreadable seqno '$seqno'"; exit 0 ;;
esac
if [ "$seqno" != -1 ]; then
	echo "$seqno seqno=$seqno safe_to_bootstrap=${safe:-0} source=grastate.dat"
	exit 0
fi
[ -e "$dd/ibdata1" ] || { echo "refuse: the data dir holds no InnoDB files and grastate.dat no seqno"; exit 0; }
mkdir -p "$run" && own "$run"
log=$run/wsrep-recover.log
rm -f "$log"
if ! mariadbd --defaults-file="$cnf" --wsrep-recover --log-error="$log" >/dev/null 2>&1; then
	echo "refuse: seqno -1 in grastate.dat and mariadbd --wsrep-recover failed: $(grep -a ERROR "$log" 2>/dev/null | head -n 1)"
	exit 0
fi
pos=$(grep -a 'WSREP: Recovered position:' "$log" | tail -n 1 | sed 's/.*Recovered position: *//')
rec=${pos##*:}
case "$rec" in
'' | *[!0-9-]*) echo "refuse: seqno -1 in grastate.dat and --wsrep-recover printed no position"; exit 0 ;;
esac
case "$pos" in
00000000-0000-0000-0000-000000000000:*) echo "-1 no cluster position (never joined one)"; exit 0 ;;
esac
echo "$rec seqno=$rec safe_to_bootstrap=${safe:-0} source=wsrep-recover"
