package runner

import (
	"strings"

	"github.com/dstgen/dstgen/internal/shell"
)

// probeScript is the whole capability probe for one host: one sh script,
// one round trip, key=value lines out. Each fault capability is probed by
// doing it, never by finding a binary: an iptables rule is added to a
// private chain no traffic traverses, a netem qdisc is added on lo inside a
// throwaway network namespace (or on a throwaway dummy link), and all of it
// is removed again. Missing tools are reported, never fatal. tag is a
// random [0-9a-f]{8} that names the throwaway chain, netns and link.
// bins are plan requirements that name a binary (already checked against
// binaryName, so each is one safe shell word): each is looked up on PATH,
// /usr/sbin and /sbin and asked for its version, bounded.
func probeScript(workdir, tag string, bins []string) string {
	var b strings.Builder
	b.WriteString("T=" + shell.Quote(tag) + "\nW=" + remotePath(workdir) + "\nBINS=" + shell.Quote(strings.Join(bins, " ")) + "\n")
	b.WriteString(probeBody)
	return b.String()
}

const probeBody = `PATH=$PATH:/usr/sbin:/sbin:/usr/local/sbin
export LC_ALL=C
one() { printf '%s' "$*" | tr '\n\r' '  ' | cut -c1-200; }
ver() { "$@" 2>&1 </dev/null | head -n1 | tr -d '\r' | cut -c1-120; }
has() { command -v "$1" 2>/dev/null; }
kv() { printf '%s=%s\n' "$1" "$(one "$2")"; }
TO=; has timeout >/dev/null && TO="timeout 5"
u=$(id -u); kv uid "$u"
SU=
if [ "$u" = 0 ]; then kv root yes; kv sudo n/a
else
	kv root no
	# sudo is reported for deploy's package installs; the faults run as the
	# SSH user (one rule: root means uid 0), so nothing here uses it.
	if has sudo >/dev/null && sudo -n true 2>/dev/null; then kv sudo yes; else kv sudo no; fi
fi
kv kernel "$(uname -r)"
kv arch "$(uname -m)"
kv sysname "$(uname -s)"
kv os "$( (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME") || uname -s)"
kv boot_id "$(cat /proc/sys/kernel/random/boot_id 2>/dev/null)"
# container: the markers runtimes leave, then systemd-detect-virt, then
# PID 1's cgroup path.
ct=
[ -f /.dockerenv ] && ct=docker
[ -z "$ct" ] && [ -f /run/.containerenv ] && ct=podman
if [ -z "$ct" ] && has systemd-detect-virt >/dev/null; then
	v=$($TO systemd-detect-virt -c 2>/dev/null </dev/null); [ -n "$v" ] && [ "$v" != none ] && ct=$v
fi
if [ -z "$ct" ] && [ -r /proc/1/cgroup ]; then
	case $(cat /proc/1/cgroup) in *kubepods*) ct=kubernetes;; *docker*) ct=docker;; *libpod*) ct=podman;; *lxc*) ct=lxc;; *containerd*) ct=containerd;; esac
fi
kv container "$ct"
d=$W; i=0
while [ ! -d "$d" ] && [ $i -lt 64 ]; do d=$(dirname "$d"); i=$((i+1)); done
kv disk.path "$d"
kv disk.free_kb "$(df -Pk "$d" 2>/dev/null | awk 'NR==2 {print $4}')"
for t in setsid timeout sha256sum nohup; do p=$(has $t); kv "tool.$t" "${p:-no}"; done

# iptables: add a comment-tagged RETURN rule to a private, unreferenced chain.
p=$(has iptables)
if [ -n "$p" ]; then
	kv iptables.path "$p"; kv iptables.version "$(ver iptables -V)"
	c=DSTGEN_PROBE_$T
	if m=$($SU iptables -w 5 -N "$c" 2>&1 </dev/null); then
		if m=$($SU iptables -w 5 -A "$c" -m comment --comment dstgen-probe -j RETURN 2>&1 </dev/null); then kv iptables.works yes
		else kv iptables.works no; kv iptables.msg "$m"; fi
		$SU iptables -w 5 -F "$c" >/dev/null 2>&1 </dev/null
		$SU iptables -w 5 -X "$c" >/dev/null 2>&1 </dev/null
	else kv iptables.works no; kv iptables.msg "$m"; fi
else kv iptables.path no; fi

# ip netns: create and delete a throwaway namespace.
NS=
p=$(has ip)
if [ -n "$p" ]; then
	kv ip.path "$p"; kv ip.version "$(ver ip -V)"
	if m=$($SU ip netns add "dstgen-probe-$T" 2>&1 </dev/null); then kv netns.works yes; NS=dstgen-probe-$T
	else kv netns.works no; kv netns.msg "$m"; fi
else kv ip.path no; kv netns.works no; kv netns.msg "ip (iproute2) not installed"; fi

# tc: add netem (and htb) on lo inside the throwaway namespace, or on a
# throwaway dummy link when namespaces are unavailable. Never a real link.
p=$(has tc)
if [ -n "$p" ]; then
	kv tc.path "$p"; kv tc.version "$(ver tc -V)"
	if [ -n "$NS" ]; then
		X="$SU ip netns exec $NS tc"; dev=lo; where="lo in throwaway netns"
	elif $SU ip link add "dgp$T" type dummy >/dev/null 2>&1 </dev/null; then
		X="$SU tc"; dev=dgp$T; where="throwaway dummy link"
	else X=; fi
	if [ -n "$X" ]; then
		kv netem.where "$where"
		if m=$($X qdisc add dev $dev root netem delay 1ms 2>&1 </dev/null); then kv netem.works yes; $X qdisc del dev $dev root >/dev/null 2>&1 </dev/null
		else kv netem.works no; kv netem.msg "$m"; fi
		if m=$($X qdisc add dev $dev root handle 1: htb default 1 2>&1 </dev/null); then kv htb.works yes; $X qdisc del dev $dev root >/dev/null 2>&1 </dev/null
		else kv htb.works no; kv htb.msg "$m"; fi
	else m="no throwaway netns or dummy link to test on (needs root)"; kv netem.works no; kv netem.msg "$m"; kv htb.works no; kv htb.msg "$m"; fi
	[ "$dev" = "dgp$T" ] && $SU ip link del "dgp$T" >/dev/null 2>&1 </dev/null
else kv tc.path no; kv netem.works no; kv netem.msg "tc (iproute2) not installed"; kv htb.works no; kv htb.msg "tc (iproute2) not installed"; fi
[ -n "$NS" ] && $SU ip netns del "$NS" >/dev/null 2>&1 </dev/null

# faketime: does the wrapper really shift the clock of a libc program?
p=$(has faketime)
if [ -n "$p" ]; then
	kv faketime.path "$p"; kv faketime.version "$(dpkg-query -W -f '${Version}' faketime 2>/dev/null)"
	a=$(date +%s); f=$($TO faketime -f +1d date +%s 2>/dev/null </dev/null)
	case $f in ''|*[!0-9]*) kv faketime.works no;; *) if [ $((f - a)) -gt 80000 ]; then kv faketime.works yes; else kv faketime.works no; fi;; esac
else kv faketime.path no; fi

# systemd: PID 1 is systemd, systemctl is-system-running answers, and PID 1
# shares this host's network namespace (a unit started from a network
# namespace would otherwise run in another network).
p=$(has systemctl)
p1=$(cat /proc/1/comm 2>/dev/null)
kv pid1 "$p1"
if [ -n "$p" ]; then
	kv systemctl.path "$p"; kv systemctl.version "$(ver systemctl --version)"
	st=$($TO systemctl is-system-running 2>/dev/null </dev/null | head -n1)
	kv systemd.state "$st"
	n1=$(readlink /proc/1/ns/net 2>/dev/null); n0=$(readlink /proc/self/ns/net 2>/dev/null)
	if [ "$p1" != systemd ]; then kv systemctl.works no; kv systemctl.msg "PID 1 is ${p1:-unknown}, not systemd"
	elif [ -n "$n1" ] && [ "$n1" != "$n0" ]; then kv systemctl.works no; kv systemctl.msg "PID 1 (systemd) is in another network namespace"
	else
		case $st in
		initializing|starting|running|degraded|maintenance|stopping) kv systemctl.works yes;;
		*) kv systemctl.works no; kv systemctl.msg "systemctl is-system-running answered '${st:-nothing}'";;
		esac
	fi
else kv systemctl.path no; fi

# Binaries the plan names: found on PATH, asked for --version (or the
# version subcommand, as etcdctl wants), each bounded by timeout 5.
for b in $BINS; do
	p=$(has "$b")
	kv "bin.$b.path" "${p:-no}"
	[ -z "$p" ] && continue
	v=$($TO "$p" --version 2>&1 </dev/null) || v=
	case $v in ''|*'unknown flag'*|*'unrecognized option'*|*'invalid option'*) v=$($TO "$p" version 2>&1 </dev/null) || v=;; esac
	kv "bin.$b.version" "$(printf '%s\n' "$v" | sed -n '/./{p;q;}' | cut -c1-120)"
done

for t in stress-ng go dmsetup toxiproxy-server toxiproxy-cli docker podman; do
	p=$(has $t)
	kv "$t.path" "${p:-no}"
	[ -z "$p" ] && continue
	case $t in
	go) kv go.version "$(ver go version)";;
	docker|podman)
		kv "$t.version" "$(ver $t --version)"
		if $TO $SU $t info >/dev/null 2>&1 </dev/null; then kv "$t.works" yes; else kv "$t.works" no; kv "$t.msg" "$t info failed (daemon down or no permission)"; fi;;
	dmsetup) kv dmsetup.version "$(dmsetup version 2>/dev/null </dev/null | head -n1)";;
	*) kv "$t.version" "$(ver $t --version)";;
	esac
done
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then kv cgroup.version 2; kv cgroup.controllers "$(cat /sys/fs/cgroup/cgroup.controllers)"
elif [ -d /sys/fs/cgroup/blkio ]; then kv cgroup.version 1; kv cgroup.controllers blkio
else kv cgroup.version none; fi
echo probe.done=1
`
