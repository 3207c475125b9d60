package analyze

import (
	"strings"
	"testing"
)

// Every checker the plan's §7.M declares must have run on its input: one
// that could not (no-lost-ack without a final state) keeps the scenario
// from any PASS, with the reason, however clean the other checker came
// out (docs/verdicts.md §3.1 step 4).
func TestDeclaredCheckerThatCouldNotRunIsNoPass(t *testing.T) {
	planText := strings.Replace(auditPlanHeader,
		"| C1 | \"get/put on a single key are linearizable\" | safety |",
		"| C1 | \"get/put on a single key are linearizable, and no acknowledged write is lost\" | safety |", 1) +
		seriousScenarioChecker("S1", "kv_lin_and_durability", "kv", "linearizability and no-lost-ack over the final state")
	rep := analyzeOne(t, planText, runGen{scenario: "S1", seed: 1, tier: "smoke", nodes: 3, dur: 60, ops: 200, windows: []win{{epoch: "S1-w1", nemesis: "kill-9", target: "leader", at: 20, dur: 10}}}, nil)
	s := &rep.Scenarios[0]
	if strings.HasPrefix(string(s.Verdict), "PASS") || strings.HasPrefix(string(s.TreeVerdict), "PASS") {
		t.Fatalf("verdict %s with no final state for no-lost-ack; reasons %+v", s.Verdict, s.Reasons)
	}
	if s.Verdict != PartialSurface || !strings.Contains(reasonText(s), "final state") {
		t.Errorf("verdict %s, reasons %q: want PARTIAL-surface naming the missing final state", s.Verdict, reasonText(s))
	}
}
