package sshtest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/dstgen/dstgen/testbed/netns"
)

// netLockPath serialises NewNet across test binaries: every Net uses
// 10.77.0.0/24 on a root-namespace bridge, and two at once would fight over
// the route.
const netLockPath = netns.Lock

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
	var links []netns.Link
	ctx := context.Background()
	t.Cleanup(func() {
		for _, l := range links {
			if _, err := netns.RemoveLink(ctx, l); err != nil {
				t.Errorf("sshtest: remove %s: %v", l.NS, err)
			}
		}
		if err := netns.RemoveBridge(ctx, nt.Bridge); err != nil {
			t.Errorf("sshtest: %v", err)
		}
		unlock()
	})
	// The testbed's own network code, on a bridge of this test's.
	if _, err := netns.MakeBridge(ctx, nt.Bridge, netns.ControlAddr); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	for i := 0; i < n; i++ {
		h := NetHost{NS: fmt.Sprintf("dstgen-%s-%d", id, i), Addr: "10.77.0." + strconv.Itoa(10+i)}
		l := netns.Link{NS: h.NS, Veth: fmt.Sprintf("dgv%s%d", id, i), Address: h.Addr}
		links = append(links, l)
		nt.Hosts = append(nt.Hosts, h)
		if _, err := netns.MakeLink(ctx, nt.Bridge, l); err != nil {
			t.Fatalf("sshtest: host %d: %v", i, err)
		}
	}
	return nt
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
