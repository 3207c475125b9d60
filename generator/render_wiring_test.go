package generator

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// The plan's run wiring (docs/plan-format.md §9.6) becomes commands that
// run on the hosts: the driver's name runs its uploaded binary, a SUT file
// its uploaded copy under harness/ (two of one name keep their dirs), the
// header's leader query and quiesce are every scenario's unless it names
// its own, and "within" bounds the quiesce.
func TestWireScenarios(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"scripts/leader.sh", "tools/leader.sh", "scripts/healthy.sh"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pl := &plan.Plan{
		LeaderQuery: "`sh scripts/leader.sh` (asks every member)",
		Quiesce:     "`sh scripts/healthy.sh` within 10s",
		Scenarios: []plan.Scenario{
			{DriverCommand: "`workload -clients 5 -keys scripts` (prose)", FinalState: "`workload -final-only`"},
			{DriverCommand: "`./workload -mode fresh-puts`", LeaderQuery: "`sh tools/leader.sh`", Quiesce: "`sh scripts/healthy.sh`"},
			{DriverCommand: "no backticks here"},
		},
	}
	m := &model{DriverDir: "workload", SUTRel: "../sut", Scenarios: []scenarioModel{{Command: "default-1"}, {Command: "default-2"}, {Command: "default-3"}}}
	wireScenarios(m, pl, root)
	const bin, h = `"$DSTGEN_WORKDIR/bin/workload"`, `"$DSTGEN_WORKDIR/harness/`
	want := []scenarioModel{
		{Command: bin + " -clients 5 -keys scripts", FinalState: bin + " -final-only", LeaderQuery: "sh " + h + `leader.sh"`, Quiesce: "sh " + h + `healthy.sh"`, QuiesceTimeout: "10s"},
		{Command: bin + " -mode fresh-puts", LeaderQuery: "sh " + h + `tools-leader.sh"`, Quiesce: "sh " + h + `healthy.sh"`, QuiesceTimeout: "30s"},
		{Command: "default-3", LeaderQuery: "sh " + h + `leader.sh"`, Quiesce: "sh " + h + `healthy.sh"`, QuiesceTimeout: "10s"},
	}
	for i := range want {
		if !reflect.DeepEqual(m.Scenarios[i], want[i]) {
			t.Errorf("scenario %d:\n got %+v\nwant %+v", i+1, m.Scenarios[i], want[i])
		}
	}
	wantHarness := []harnessFile{
		{Local: "../sut/scripts/leader.sh", Name: "leader.sh"},
		{Local: "../sut/scripts/healthy.sh", Name: "healthy.sh"},
		{Local: "../sut/tools/leader.sh", Name: "tools-leader.sh"},
	}
	if !reflect.DeepEqual(m.Harness, wantHarness) {
		t.Errorf("harness %+v, want %+v", m.Harness, wantHarness)
	}
}
