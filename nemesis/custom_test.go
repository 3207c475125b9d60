package nemesis

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/scenarios"
	"github.com/dstgen/dstgen/session"
)

// counterCustom increments a counter file in the host's work dir, reads it
// back, resets it, and logs every heal: the commands use the environment
// dstgen gives them.
var counterCustom = scenarios.Custom{
	Inject:   `n=$(cat "$DSTGEN_WORKDIR/counter" 2>/dev/null || echo 0); echo $((n+1)) > "$DSTGEN_WORKDIR/counter"`,
	Heal:     `echo 0 > "$DSTGEN_WORKDIR/counter"; echo "$DSTGEN_FAULT_EPOCH $DSTGEN_HOST" >> "$DSTGEN_WORKDIR/heals"`,
	Evidence: `cat "$DSTGEN_WORKDIR/counter" 2>/dev/null || echo 0`,
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestCustomRunsCommandsOnEveryTarget(t *testing.T) {
	hosts, x := newCluster(t, 2)
	ctx := context.Background()
	// A work dir a shell would split or unquote: dstgen's own values are quoted.
	odd := filepath.Join(hosts[1].Workdir, "it's a dir")
	if err := os.Mkdir(odd, 0o755); err != nil {
		t.Fatal(err)
	}
	hosts[1].Workdir = odd
	cu := counterCustom
	a, err := Custom("rolling-upgrade").Inject(ctx, x, Fault{Epoch: "S7-w1", Targets: hosts, Custom: &cu})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		if got := readFile(t, filepath.Join(h.Workdir, "counter")); got != "1" {
			t.Errorf("%s: counter %q after inject, want 1", h.Name, got)
		}
	}
	ev, err := a.Evidence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != "custom" || ev.Name != cu.Evidence || ev.Verdict != session.SignalChanged ||
		string(ev.Before) != `{"h1":0,"h2":0}` || string(ev.After) != `{"h1":1,"h2":1}` {
		t.Errorf("evidence %+v, want custom changed 0 → 1 on both", ev)
	}
	if tc, err := a.TargetCheck(ctx); tc != nil || err != nil {
		t.Errorf("target check %+v, %v; want none", tc, err)
	}
	for range 2 { // Heal is idempotent: the heal command runs once.
		if err := a.Heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hosts {
		if got := readFile(t, filepath.Join(h.Workdir, "counter")); got != "0" {
			t.Errorf("%s: counter %q after heal, want 0", h.Name, got)
		}
		if got := readFile(t, filepath.Join(h.Workdir, "heals")); got != "S7-w1 "+h.Name {
			t.Errorf("%s: heals %q, want one heal with the epoch and host", h.Name, got)
		}
	}
	if ev, _ := a.Evidence(ctx); ev.Verdict != session.SignalUnchanged {
		t.Errorf("evidence after heal %+v, want unchanged", ev)
	}
}

func TestHealAllRunsACustomHealAfterACrash(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	cu := counterCustom
	if _, err := Custom("config-divergence").Inject(ctx, x, Fault{Epoch: "S7-w2", Targets: hosts, Custom: &cu}); err != nil {
		t.Fatal(err)
	}
	removed, err := HealAll(ctx, x, hosts)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].What != "undo S7-w2.custom" {
		t.Errorf("removed %+v, want the custom undo", removed)
	}
	if got := readFile(t, filepath.Join(hosts[0].Workdir, "counter")); got != "0" {
		t.Errorf("counter %q after HealAll, want 0", got)
	}
}

func TestCustomEvidenceAndRefusals(t *testing.T) {
	hosts, x := newCluster(t, 1)
	ctx := context.Background()
	cases := []struct {
		name        string
		custom      *scenarios.Custom
		wantErr     string
		wantVerdict string
	}{
		{"no custom", nil, "no inject command", ""},
		{"no inject", &scenarios.Custom{Heal: "true", Evidence: "echo 1"}, "no inject command", ""},
		{"inject fails", &scenarios.Custom{Inject: "echo broken >&2; exit 3"}, "inject command", ""},
		{"no evidence command", &scenarios.Custom{Inject: "true"}, "", session.SignalAbsent},
		{"evidence not a number", &scenarios.Custom{Inject: "true", Evidence: "echo leader=h1"}, "", session.SignalAmbiguous},
		{"evidence unchanged", &scenarios.Custom{Inject: "true", Evidence: "echo 42"}, "", session.SignalUnchanged},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := Custom("custom").Inject(ctx, x, Fault{Epoch: "S7-w3", Targets: hosts, Custom: c.custom})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ev, err := a.Evidence(ctx)
			if err != nil || ev.Verdict != c.wantVerdict {
				t.Errorf("evidence %+v, %v; want %s", ev, err, c.wantVerdict)
			}
			if err := a.Heal(ctx); err != nil {
				t.Errorf("heal: %v", err)
			}
		})
	}
}

func TestCustomStandsForItsRow(t *testing.T) {
	in := Custom("rolling-upgrade").Info()
	if in.ID != "rolling-upgrade" || in.Group != "cluster" || !in.BuiltIn || !strings.Contains(in.Summary, "upgrade one node at a time") {
		t.Errorf("info %+v, want the rolling-upgrade row run through custom commands", in)
	}
	n, err := Lookup("custom")
	if err != nil || n.Info().ID != "custom" {
		t.Errorf("Lookup(custom) = %v, %v", n, err)
	}
}
