package nemesis

import (
	"context"
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
