#!/bin/sh
# leader.sh [CLIENT_URL] — print the current etcd leader as one line,
# "<member name> <client URL>", for scenarios.yml's leader_query. Runs on a
# SUT host against the local member: CLIENT_URL, else $ETCD_ENDPOINT, else
# http://127.0.0.1:2379. Exit 0 with the line; 1 with a one-line reason on
# stderr when no member that answers names a leader; 2 without etcdctl.
#
# It asks the local member only (endpoint status, no --cluster): dstgen
# runs the query on every member at once and believes the leader a
# majority names (docs/scenarios-yml.md §3.7), so an isolated ex-leader
# that still calls itself leader is outvoted there. Asking the others from
# here would cost a dial timeout per member a partition cuts off — longer
# than the readings of a short fault window. Member ids are 64-bit and
# compared as strings (awk numbers are doubles).
set -u
ep=${1:-${ETCD_ENDPOINT:-http://127.0.0.1:2379}}
ctl=${ETCDCTL:-etcdctl}
command -v "$ctl" >/dev/null 2>&1 || { echo "leader.sh: $ctl not found (apt-get install etcd-client)" >&2; exit 2; }
export ETCDCTL_API=3
# Each call is bounded: 2 s to dial, 3 s per request.
status=$("$ctl" --endpoints "$ep" --dial-timeout 2s --command-timeout 3s endpoint status -w fields 2>/dev/null)
members=$("$ctl" --endpoints "$ep" --dial-timeout 2s --command-timeout 3s member list -w fields 2>/dev/null)
line=$(printf '%s\n--members--\n%s\n' "$status" "$members" | awk '
function unq(s) { gsub(/"/, "", s); return s }
/^--members--$/ { inm = 1; next }
!inm && $1 == "\"MemberID\"" { mid = $3 "" }
!inm && $1 == "\"Leader\"" { ldr = $3 "" }
!inm && $1 == "\"Endpoint\"" {
	epof[mid] = unq($3)
	if (ldr != "" && ldr != "0") best = ldr
	mid = ""; ldr = ""
}
inm && $1 == "\"ID\"" { id = $3 "" }
inm && $1 == "\"Name\"" { name[id] = unq($3) }
inm && $1 == "\"ClientURL\"" { u = unq($3); sub(/,.*/, "", u); if (!(id in url)) url[id] = u }
END {
	if (best == "") exit 1
	u = (best in url) ? url[best] : epof[best]
	n = (best in name) ? name[best] : best
	if (u == "") u = "-"
	print n " " u
}')
if [ -z "$line" ]; then
	echo "leader.sh: the member at $ep names no leader (or does not answer)" >&2
	exit 1
fi
echo "$line"
