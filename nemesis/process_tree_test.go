package nemesis

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dstgen/dstgen/session"
)

// childOf finds the one child of pid, as a dstgen job's `sh -c CMD` has
// the real server as its child.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if err == nil {
			if f := strings.Fields(string(b)); len(f) == 1 {
				n, _ := strconv.Atoi(f[0])
				return n
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pid %d has no single child", pid)
	return 0
}

// A SUT run as `sh -c 'CMD; …'` has the server as the shell's child:
// kill-9 and pause must reach the whole tree, and the kill's evidence
// reads changed only once the child is gone too — killing the pidfile's
// shell alone would leave the server running and still "change the pid".
func TestProcessFaultsReachTheTreeUnderAShell(t *testing.T) {
	hosts, x := newCluster(t, 1)
	h := hosts[0]
	s := newSUTProc(t, x, &h, "1")
	s.args = []string{"sh", "-c", "sleep 611; true"}
	_ = os.Remove(s.pidfile)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	shPID := s.pid(t)
	server := childOf(t, shPID)
	ctx := context.Background()

	a, err := mustNemesis(t, "pause").Inject(ctx, x, Fault{Epoch: "T1-w1", Nemesis: "pause", Targets: []Host{h}, Cluster: []Host{h}})
	if err != nil {
		t.Fatal(err)
	}
	if st := procState(t, server); st != "T" {
		t.Errorf("pause: the server under the shell is %q, want T", st)
	}
	if err := a.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	if st := procState(t, server); st == "T" {
		t.Errorf("after heal the server is still stopped")
	}

	a, err = mustNemesis(t, "kill-9").Inject(ctx, x, Fault{Epoch: "T1-w2", Nemesis: "kill-9", Targets: []Host{h}, Cluster: []Host{h}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for procState(t, server) != "" && procState(t, server) != "Z" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if st := procState(t, server); st != "" && st != "Z" {
		t.Fatalf("kill-9 left the server (pid %d, state %s) running under the killed shell", server, st)
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Verdict != session.SignalChanged {
		t.Errorf("kill-9 evidence %+v, want changed", ev)
	}
}
