package generator

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/scenarios"
)

// pick is which scenarios a run names: one id, or every one.
type pick struct {
	id  string
	all bool
}

func one(id string) pick { return pick{id: id} }

var every = pick{all: true}

// Issue 23 item 7: a --scenarios file whose scenario injects a fault its
// plan's scenario does not state (S1's leader isolation swapped for a
// follower partition) is refused at its line, not run and reported under
// the plan's name; fewer of the plan's faults, a custom nemesis, or a
// scenario not being run are fine.
func TestFaultDrift(t *testing.T) {
	planPath, err := filepath.Abs(filepath.Join("..", "examples", "etcd", "docs", "testing-plans", "etcd-kv-guarantees.md"))
	if err != nil {
		t.Fatal(err)
	}
	file := func(faults map[string][]string) *scenarios.File {
		sf := &scenarios.File{Path: filepath.Join(t.TempDir(), "subst.yml"), Plan: planPath}
		for i, id := range []string{"S1", "S2"} {
			sc := scenarios.Scenario{ID: id, Line: 10 * (i + 1)}
			for _, n := range faults[id] {
				sc.Faults = append(sc.Faults, scenarios.Fault{Nemesis: n})
			}
			sf.Scenarios = append(sf.Scenarios, sc)
		}
		return sf
	}
	for _, c := range []struct {
		name   string
		faults map[string][]string
		opt    pick
		want   string // "" = accepted
	}{
		{"the plan's faults", map[string][]string{"S1": {"leader-isolation", "partition-asym"}}, one("S1"), ""},
		{"fewer of them", map[string][]string{"S1": {"leader-isolation"}}, one("S1"), ""},
		{"follower partition", map[string][]string{"S1": {"partition-full"}}, one("S1"),
			"subst.yml:10: drift: S1 injects partition-full, but the plan's S1 (" + planPath + ") states leader-isolation, partition-asym"},
		{"custom", map[string][]string{"S1": {"custom"}}, one("S1"), ""},
		{"another scenario", map[string][]string{"S2": {"pause"}}, one("S1"), ""},
		{"--all", map[string][]string{"S2": {"pause"}}, every, "subst.yml:20: drift: S2 injects pause"},
	} {
		err := FaultDrift(file(c.faults), c.opt.id, c.opt.all)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	// Without a readable plan nothing is judged.
	sf := file(map[string][]string{"S1": {"pause"}})
	sf.Plan = filepath.Join(t.TempDir(), "gone.md")
	if err := FaultDrift(sf, "S1", false); err != nil {
		t.Errorf("unreadable plan: %v", err)
	}
}
