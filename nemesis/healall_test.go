package nemesis

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dstgen/dstgen/env"
)

// hangingExec answers HealAll's script with one removed undo per host,
// except on the hosts in hang, which never answer: their call ends when
// its context does, as the transport's bound ends a real one.
type hangingExec struct {
	hang map[string]bool
	mu   sync.Mutex
	ran  []string
}

func (x *hangingExec) Run(ctx context.Context, h env.Host, _ string) (string, error) {
	if x.hang[h.Name] {
		<-ctx.Done()
		return "", ctx.Err()
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	x.mu.Lock()
	x.ran = append(x.ran, h.Name)
	x.mu.Unlock()
	return "removed undo S1-w1.iptables\n", nil
}

// Two hosts that never answer cost one bound, not one each, and never
// starve the hosts that answer: every one of those is healed.
func TestHealAllHealsTheHostsThatAnswerWhileOthersHang(t *testing.T) {
	x := &hangingExec{hang: map[string]bool{"h1": true, "h2": true}}
	var hosts []Host
	for _, n := range []string{"h1", "h2", "h3", "h4"} {
		hosts = append(hosts, Host{Host: env.Host{Name: n}, Workdir: "/w"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	removed, err := HealAll(ctx, x, hosts)
	if err == nil || !strings.Contains(err.Error(), "h1") || !strings.Contains(err.Error(), "h2") {
		t.Errorf("err = %v, want both hung hosts named", err)
	}
	if len(removed) != 2 || removed[0].Host != "h3" || removed[1].Host != "h4" {
		t.Errorf("removed %+v, want h3's and h4's undo, in hosts' order", removed)
	}
}

// A live run heals its faults while its workload runs on: HealAll with the
// workload's tag in keep runs every other undo and leaves that guard, which
// the run's own stop removes (Unguard) and a later heal --all runs.
func TestHealAllKeepsTheGuardsItIsTold(t *testing.T) {
	ctx := context.Background()
	wd := t.TempDir()
	h := Host{Host: env.Host{Name: "h1"}, Workdir: wd}
	x := localExec{}
	mark := func(name string) string { return "touch " + wd + "/" + name }
	if err := Guard(ctx, x, h, "sess.wl-S1", "workload", mark("workload-stopped")); err != nil {
		t.Fatal(err)
	}
	if err := armUndo(ctx, x, h, "sess.S1-w1", "iptables", mark("healed")); err != nil {
		t.Fatal(err)
	}
	removed, err := HealAll(ctx, x, []Host{h}, "sess.wl-S1")
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].What != "undo sess.S1-w1.iptables" {
		t.Errorf("removed %+v, want only the fault's undo", removed)
	}
	if _, err := os.Stat(wd + "/workload-stopped"); err == nil {
		t.Error("the kept guard ran")
	}
	left, err := Leftovers(ctx, x, []Host{h})
	if err != nil || len(left) != 1 || left[0].What != "undo sess.wl-S1.workload" {
		t.Errorf("leftovers %+v, %v; want the kept guard", left, err)
	}
	if removed, err := HealAll(ctx, x, []Host{h}); err != nil || len(removed) != 1 {
		t.Errorf("heal --all removed %+v, %v; want the guard", removed, err)
	}
	if _, err := os.Stat(wd + "/workload-stopped"); err != nil {
		t.Error("heal --all did not run the guard")
	}
}
