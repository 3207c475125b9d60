package nemesis

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/runner"
	"github.com/dstgen/dstgen/testbed"
	"github.com/dstgen/dstgen/testsupport/sshtest"
)

// A network fault outlives dstgen by its lease at most: with nobody
// reading its evidence (dstgen crashed, or lost its line) every host
// heals itself from its undo script; each reading renews the lease.
func TestNetworkFaultHealsItselfWhenNobodyRenews(t *testing.T) {
	hosts, x := newCluster(t, 3)
	ctx := context.Background()
	rulesOn := func(h Host) bool {
		out, _ := x.Run(ctx, h.Host, "iptables -w -S "+Chain+" 2>/dev/null | grep -c -- '-j DROP' || true")
		return strings.TrimSpace(out) != "0" && strings.TrimSpace(out) != ""
	}
	a, err := mustNemesis(t, "partition-full").Inject(ctx, x, Fault{Epoch: "S1-w1", Session: "20261202T000000Z", Nemesis: "partition-full",
		Targets: hosts[:1], Cluster: hosts, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Heal(context.Background()) })
	// Renewed by every reading: still there after twice its lease.
	for i := 0; i < 4; i++ {
		if _, err := a.Evidence(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	if !rulesOn(hosts[0]) {
		t.Fatal("the partition healed itself while its evidence was being read")
	}
	// Then nobody reads it: gone within its lease and the timer's tick.
	left := func() []string {
		var out []string
		for _, h := range hosts {
			if rulesOn(h) {
				out = append(out, h.Name+" rules")
			}
			if ents, _ := os.ReadDir(filepath.Join(h.Workdir, "nemesis", "active")); len(ents) > 0 {
				out = append(out, h.Name+" undo files")
			}
		}
		return out
	}
	deadline := time.Now().Add(15 * time.Second)
	for l := left(); len(l) > 0; l = left() {
		if time.Now().After(deadline) {
			t.Fatalf("the partition outlived its lease by 13 s with nobody renewing it: %v", l)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dstgen never cuts its own line: a partition that drops everything from
// the address dstgen connects from (the control node, here a client of
// partition-majority) still lets its SSH session through, so the window's
// evidence, its heal and `dstgen heal --all` reach every host.
func TestPartitionNeverCutsDstgensOwnSSH(t *testing.T) {
	// The product's testbed: its login user is uid 0, as faults need.
	sshtest.LockNet(t)
	if err := testbed.CheckTools(exec.LookPath); err != nil {
		t.Skip("testbed:", err)
	}
	dir := filepath.Join(t.TempDir(), "tb")
	t.Cleanup(func() {
		if _, err := testbed.Down(context.Background(), dir); err != nil {
			t.Errorf("testbed down: %v", err)
		}
	})
	upCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	start := time.Now()
	res, err := testbed.Up(upCtx, testbed.Config{Dir: dir, N: 3, DataMiB: 16})
	cancel()
	t.Logf("testbed up: %s", time.Since(start))
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.Load(res.State.EnvFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := runner.NewPool(e, runner.Options{Timeout: 5 * time.Second})
	t.Cleanup(func() { _ = pool.Close() })
	x := runner.Shell{Pool: pool}
	var hosts []Host
	for i, h := range e.Hosts {
		hosts = append(hosts, Host{Host: h, Workdir: res.State.Hosts[i].Workdir})
	}
	ctx := context.Background()
	// The control node is the bridge's address: a "client" there is us.
	control := Host{Host: env.Host{Name: "control", Address: "10.77.0.1"}}
	a, err := mustNemesis(t, "partition-majority").Inject(ctx, x, Fault{Epoch: "S1-w1", Session: "20261202T000000Z", Nemesis: "partition-majority",
		Targets: hosts[:1], Cluster: hosts, Clients: []Host{control}, Pick: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := HealAll(context.Background(), x, hosts); err != nil {
			t.Errorf("heal --all: %v", err)
		}
	}()
	t.Logf("injected: %s", time.Since(start))
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatalf("evidence over SSH with the partition in place: %v", err)
	}
	t.Logf("evidence: %s", time.Since(start))
	if ev.Verdict != "changed" && ev.Verdict != "unchanged" {
		t.Errorf("evidence %+v", ev)
	}
	for _, h := range hosts {
		if _, err := x.Run(ctx, h.Host, "true"); err != nil {
			t.Errorf("%s: dstgen's SSH cut by its own partition: %v", h.Name, err)
		}
	}
	if err := a.Heal(ctx); err != nil {
		t.Errorf("heal over SSH: %v", err)
	}
}

// A healed fault's timer never touches the next injection of the same
// epoch: right after a heal, an undo script appears again under the same
// name, first without a lease (the new fault is still being applied),
// then with a lease that has run out but names another injection. The
// old timer, still asleep when the heal removed its files, must end
// rather than run that script (it did, and the re-injected partition lost
// rules half-way through its apply).
func TestDeadmanOfAHealedFaultLeavesTheNextAlone(t *testing.T) {
	hosts, x := newCluster(t, 2)
	ctx := context.Background()
	for _, withLease := range []bool{false, true} {
		f := Fault{Epoch: "S1-w1", Session: "20261202T000000Z", Nemesis: "partition-full",
			Targets: hosts[:1], Cluster: hosts, Lease: time.Second}
		a, err := mustNemesis(t, "partition-full").Inject(ctx, x, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
		h := hosts[0]
		u := undoPath(h.Workdir, f.tag(), undoKindIptables)
		marker := filepath.Join(h.Workdir, "ran")
		script := "mkdir -p " + filepath.Dir(u) + " && echo 'touch " + marker + "' > " + u
		if withLease {
			script += " && echo '1 someone-else' > " + u + leaseSuffix
		}
		if _, err := x.Run(ctx, h.Host, script); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2500 * time.Millisecond) // past the old timer's tick and lease
		out, err := x.Run(ctx, h.Host, "rm -f "+u+" "+u+leaseSuffix+"; [ -f "+marker+" ] && echo ran; rm -f "+marker)
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(out) == "ran" {
			t.Errorf("lease written=%v: the healed fault's dead-man timer ran the next injection's undo script", withLease)
		}
	}
}
