package runner

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// TestPartitionedHostInNetns: three simulated hosts, each a network
// namespace with its own sshd; a real iptables DROP inside one namespace
// cuts it off from the control node. The pool must report that host as
// timed out or failed within its bound while the others keep answering; the
// rule's own packet counter proves the partition landed (the injector's
// "OK" is not evidence); after the rule is removed the same pool reaches the
// host again.
func TestPartitionedHostInNetns(t *testing.T) {
	sshtest.Require(t)
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("iptables missing")
	}
	nt := sshtest.NewNet(t, 3)
	k := sshtest.NewKeys(t)
	var srvs []*sshtest.Server
	for _, h := range nt.Hosts {
		srvs = append(srvs, sshtest.Start(t, k, sshtest.Options{NetNS: h.NS, Addr: h.Addr, Port: 22}))
	}
	k.Trust(t, srvs...)
	e, err := env.Load(k.WriteEnv(t, srvs, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	const bound = 3 * time.Second
	p := NewPool(e, Options{Timeout: bound})
	defer p.Close()
	ctx := context.Background()

	for _, r := range p.runAll(ctx, e.Hosts, "echo up", 3, io.Discard) {
		if r.Status != StatusOK {
			t.Fatalf("before the partition %s: %+v", r.Host, r)
		}
	}

	victim := nt.Hosts[1]
	ipt := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", append([]string{"netns", "exec", victim.NS, "iptables", "-w", "5"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables %s in %s: %v: %s", strings.Join(args, " "), victim.NS, err, out)
		}
		return string(out)
	}
	rule := []string{"INPUT", "-s", "10.77.0.1", "-p", "tcp", "--dport", "22", "-j", "DROP"}
	ipt(append([]string{"-I"}, rule...)...)
	healed := false
	t.Cleanup(func() {
		if !healed {
			args := append([]string{"netns", "exec", victim.NS, "iptables", "-w", "5", "-D"}, rule...)
			_ = exec.Command("ip", args...).Run()
		}
	})

	start := time.Now()
	results := p.runAll(ctx, e.Hosts, "echo up", 3, io.Discard)
	elapsed := time.Since(start)
	for i, r := range results {
		switch {
		case i == 1 && r.Status != StatusTimeout && r.Status != StatusError:
			t.Errorf("partitioned host %s: status %q, want timeout or error", r.Host, r.Status)
		case i != 1 && r.Status != StatusOK:
			t.Errorf("reachable host %s during the partition: %+v", r.Host, r)
		}
	}
	// One round trip is bounded: the partitioned host must not hold the
	// fan-out much past the bound (dial ≤ 10 s is the other ceiling).
	if elapsed > bound+10*time.Second {
		t.Errorf("fan-out with a partitioned host took %v, want about the %v bound", elapsed, bound)
	}

	// Landing evidence from the dropper itself: the DROP rule counted packets.
	if pkts := dropPackets(t, ipt("-L", "INPUT", "-v", "-x", "-n")); pkts == 0 {
		t.Errorf("DROP rule counted 0 packets: the partition did not land")
	}

	ipt(append([]string{"-D"}, rule...)...)
	healed = true
	var last Result
	for i := 0; i < 20; i++ { // bounded: 20 tries, each ≤ bound
		last, _ = p.Run(ctx, e.Hosts[1], "echo back", nil, io.Discard, io.Discard)
		if last.Status == StatusOK {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("host not reachable again after healing the partition: %+v", last)
}

var dropLine = regexp.MustCompile(`(?m)^\s*(\d+)\s+\d+\s+DROP\s`)

// dropPackets reads the packet counter of the first DROP rule in an
// `iptables -L -v -x -n` listing.
func dropPackets(t *testing.T, listing string) int {
	t.Helper()
	m := dropLine.FindStringSubmatch(listing)
	if m == nil {
		t.Fatalf("no DROP rule in listing:\n%s", listing)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(fmt.Errorf("DROP counter %q: %w", m[1], err))
	}
	return n
}
