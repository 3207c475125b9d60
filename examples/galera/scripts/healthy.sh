#!/bin/sh
# healthy.sh CNF [N] — exit 0 when the local Galera member (reached through
# the socket of CNF's [client] section) is Synced in a cluster of N
# members (default: every address of CNF's wsrep_cluster_address);
# otherwise 1. It prints both values either way, one line:
#   wsrep_local_state_comment=Synced wsrep_cluster_size=3 want=Synced/3
# so dstgen's "not healthy" error says where the member is stuck (Joining,
# Donor/Desynced, a cluster of 1). One check, no waiting: dstgen polls it.
set -u
cnf=${1:?usage: healthy.sh CNF [N]}
want=${2:-}
if [ -z "$want" ]; then
	# gcomm://a,b,c → 3
	want=$(awk '{ sub(/#.*/, "") } $1 == "wsrep_cluster_address" { sub(/^[^=]*=[ \t]*/, ""); sub(/^gcomm:\/\//, ""); print split($0, m, ","); exit }' "$cnf" 2>/dev/null)
	[ -n "$want" ] || { echo "wsrep_local_state_comment=unknown wsrep_cluster_size=unknown want=Synced/? (no wsrep_cluster_address in $cnf)"; exit 1; }
fi
if ! out=$(mariadb --defaults-file="$cnf" --connect-timeout=3 -N -B -e \
	"SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment','wsrep_cluster_size')" 2>&1); then
	echo "wsrep_local_state_comment=unknown wsrep_cluster_size=unknown want=Synced/$want (no answer: $(printf '%s' "$out" | head -n 1))"
	exit 1
fi
state=$(printf '%s\n' "$out" | awk '$1 == "wsrep_local_state_comment" { print $2 }')
size=$(printf '%s\n' "$out" | awk '$1 == "wsrep_cluster_size" { print $2 }')
echo "wsrep_local_state_comment=${state:-none} wsrep_cluster_size=${size:-none} want=Synced/$want"
[ "$state" = Synced ] && [ "$size" = "$want" ]
