package sshtest

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// netLockPath serialises NewNet across test binaries: every Net uses
// 10.77.0.0/24 on a root-namespace bridge, and two at once would fight over
// the route.
const netLockPath = "/run/dstgen-sshtest-net.lock"

// netLockWait bounds the wait for that lock. The test binaries of several
// packages queue on it at once, and one holder alone (the etcd scenario
// end to end) keeps it for about 3.5 minutes, so the bound is the queue's,
// not one test's.
const netLockWait = 10 * time.Minute

// Net is a set of network namespaces ("simulated hosts") on one bridge in
// the root namespace. The test process reaches every host directly at its
// Addr through the bridge (10.77.0.1).
type Net struct {
	Bridge string
	Hosts  []NetHost
}

// NetHost is one namespace and its address.
type NetHost struct {
	NS   string // network namespace name, dstgen-<rand>-<i>
	Addr string // 10.77.0.(10+i)
}

// NewNet creates n namespaces with veth pairs on a fresh bridge, addresses
// 10.77.0.10.., loopback up. All of it is deleted, and every process left in
// the namespaces killed by PID, in t.Cleanup.
func NewNet(t testing.TB, n int) *Net {
	t.Helper()
	Require(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("sshtest: ip (iproute2) missing")
	}
	if n < 1 || n > 200 {
		t.Fatalf("NewNet: n=%d out of range 1..200", n)
	}
	unlock := flock(t, netLockPath, netLockWait)
	id := randHex(3)
	nt := &Net{Bridge: "dgb" + id}
	t.Cleanup(func() {
		for _, h := range nt.Hosts {
			killNetnsPids(h.NS)
			_ = exec.Command("ip", "netns", "del", h.NS).Run()
		}
		_ = exec.Command("ip", "link", "del", nt.Bridge).Run()
		unlock()
	})
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "link", "add", "name", nt.Bridge, "type", "bridge")
	run("ip", "addr", "add", "10.77.0.1/24", "dev", nt.Bridge)
	run("ip", "link", "set", nt.Bridge, "up")
	for i := 0; i < n; i++ {
		h := NetHost{NS: fmt.Sprintf("dstgen-%s-%d", id, i), Addr: "10.77.0." + strconv.Itoa(10+i)}
		run("ip", "netns", "add", h.NS)
		nt.Hosts = append(nt.Hosts, h)
		outer, inner := fmt.Sprintf("dgv%s%d", id, i), fmt.Sprintf("dgp%s%d", id, i)
		run("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
		run("ip", "link", "set", inner, "netns", h.NS)
		run("ip", "-n", h.NS, "link", "set", inner, "name", "eth0")
		run("ip", "-n", h.NS, "addr", "add", h.Addr+"/24", "dev", "eth0")
		run("ip", "-n", h.NS, "link", "set", "eth0", "up")
		run("ip", "-n", h.NS, "link", "set", "lo", "up")
		run("ip", "link", "set", outer, "master", nt.Bridge)
		run("ip", "link", "set", outer, "up")
	}
	return nt
}

// killNetnsPids kills, by PID, whatever still runs in ns.
func killNetnsPids(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 1 && pid != os.Getpid() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// LockNet holds the lock NewNet takes until t's cleanup, for a test that
// puts something else on 10.77.0.0/24 (the product's `dstgen testbed up`)
// and must not overlap a NewNet of another test binary. Do not call NewNet
// in the same test: flock locks are per open file, so the second lock
// would wait on the first.
func LockNet(t testing.TB) {
	t.Helper()
	Require(t)
	t.Cleanup(flock(t, netLockPath, netLockWait))
}
