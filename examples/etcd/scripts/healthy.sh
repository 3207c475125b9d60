#!/bin/sh
# healthy.sh [CLIENT_URL] — exit 0 when every etcd member is healthy and all
# of them follow one leader: scenarios.yml's quiesce command. Runs on a SUT
# host against the local member: CLIENT_URL, else $ETCD_ENDPOINT, else
# http://127.0.0.1:2379. Otherwise exit 1 with a one-line reason on stderr
# (2 without etcdctl). One check, no waiting: dstgen polls it with its own
# bound.
set -u
ep=${1:-${ETCD_ENDPOINT:-http://127.0.0.1:2379}}
ctl=${ETCDCTL:-etcdctl}
command -v "$ctl" >/dev/null 2>&1 || { echo "healthy.sh: $ctl not found (apt-get install etcd-client)" >&2; exit 2; }
export ETCDCTL_API=3
# endpoint health commits a read through Raft on every member: it fails on a
# member without a leader or cut off from the quorum.
if ! out=$("$ctl" --endpoints "$ep" --dial-timeout 2s --command-timeout 3s endpoint health --cluster 2>&1); then
	# The "<url> is unhealthy: …" line names the member; etcdctl's JSON
	# warnings before it do not.
	bad=$(printf '%s\n' "$out" | grep ' is unhealthy' | head -n 1)
	[ -n "$bad" ] || bad=$(printf '%s\n' "$out" | grep '^Error' | head -n 1)
	echo "healthy.sh: not every member is healthy: ${bad:-etcdctl endpoint health --cluster failed}" >&2
	exit 1
fi
# A member answering health may still see another leader than the rest
# (just after a partition heals): require one leader, named by every member
# listed, and as many statuses as members.
status=$("$ctl" --endpoints "$ep" --dial-timeout 2s --command-timeout 3s endpoint status --cluster -w fields 2>/dev/null)
members=$("$ctl" --endpoints "$ep" --dial-timeout 2s --command-timeout 3s member list -w fields 2>/dev/null)
nmembers=$(printf '%s\n' "$members" | grep -c '^"ID" :')
if [ "$nmembers" -eq 0 ]; then
	echo "healthy.sh: member list from $ep gave no member" >&2
	exit 1
fi
why=$(printf '%s\n' "$status" | awk -v want="$nmembers" '
$1 == "\"Leader\"" { n++; l = $3 ""; if (l == "0") zero++; seen[l] = 1 }
END {
	k = 0; for (x in seen) k++
	if (n < want) { print n " of " want " members answered endpoint status"; exit }
	if (zero > 0) { print zero " member(s) see no leader"; exit }
	if (k != 1) { print "members name " k " different leaders"; exit }
}')
if [ -n "$why" ]; then
	echo "healthy.sh: $why" >&2
	exit 1
fi
echo "healthy members=$nmembers"
