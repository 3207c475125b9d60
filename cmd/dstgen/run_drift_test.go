package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/orchestrator"
	"github.com/dstgen/dstgen/scenarios"
)

// Issue 23 item 7: a --scenarios file whose scenario injects a fault its
// plan's scenario does not state (S1's leader isolation swapped for a
// follower partition) is refused at its line, not run and reported under
// the plan's name; fewer of the plan's faults, a custom nemesis, or a
// scenario not being run are fine.
func TestCheckAgainstPlan(t *testing.T) {
	planPath, err := filepath.Abs(filepath.Join("..", "..", "examples", "etcd", "docs", "testing-plans", "etcd-kv-guarantees.md"))
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
		opt    orchestrator.Options
		want   string // "" = accepted
	}{
		{"the plan's faults", map[string][]string{"S1": {"leader-isolation", "partition-asym"}}, orchestrator.Options{ID: "S1"}, ""},
		{"fewer of them", map[string][]string{"S1": {"leader-isolation"}}, orchestrator.Options{ID: "S1"}, ""},
		{"follower partition", map[string][]string{"S1": {"partition-full"}}, orchestrator.Options{ID: "S1"},
			"subst.yml:10: drift: S1 injects partition-full, but the plan's S1 (" + planPath + ") states leader-isolation, partition-asym"},
		{"custom", map[string][]string{"S1": {"custom"}}, orchestrator.Options{ID: "S1"}, ""},
		{"another scenario", map[string][]string{"S2": {"pause"}}, orchestrator.Options{ID: "S1"}, ""},
		{"--all", map[string][]string{"S2": {"pause"}}, orchestrator.Options{All: true}, "subst.yml:20: drift: S2 injects pause"},
	} {
		err := checkAgainstPlan(file(c.faults), c.opt)
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
	if err := checkAgainstPlan(sf, orchestrator.Options{ID: "S1"}); err != nil {
		t.Errorf("unreadable plan: %v", err)
	}
}

// At the CLI the refusal is exit 2 with its file:line, before env.yml is
// read; --allow-fault-drift turns it into a warning.
func TestRunRefusesFaultDrift(t *testing.T) {
	planPath, _ := filepath.Abs(filepath.Join("..", "..", "examples", "etcd", "docs", "testing-plans", "etcd-kv-guarantees.md"))
	dir := t.TempDir()
	p := filepath.Join(dir, "subst.yml")
	text := "version: 1\nplan: " + planPath + "\nscenarios:\n  - id: S1\n    name: x\n    workload: {command: drive, duration_s: 5}\n" +
		"    faults:\n      - {nemesis: partition-full, targets: random, at: 1s, for: 1s}\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runDstgen(t, "", "run", "S1", "--scenarios", p, "--env", filepath.Join(dir, "none.yml"))
	if code != 2 || !strings.Contains(errs, "subst.yml:4: drift: S1 injects partition-full") || !strings.Contains(errs, "--allow-fault-drift") {
		t.Errorf("exit %d stderr %q; want 2 and the drift at subst.yml:4", code, errs)
	}
	// Accepted on request: the warning is printed, then env.yml is read.
	code, _, errs = runDstgen(t, "", "run", "S1", "--scenarios", p, "--env", filepath.Join(dir, "none.yml"), "--allow-fault-drift")
	if !strings.Contains(errs, "warning: ") || !strings.Contains(errs, "drift: S1 injects partition-full") || !strings.Contains(errs, "none.yml") {
		t.Errorf("--allow-fault-drift: exit %d stderr %q", code, errs)
	}
}
