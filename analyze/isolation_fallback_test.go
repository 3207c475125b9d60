package analyze

import (
	"strings"
	"testing"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/plan"
)

// An isolation claim over a kv model picks the serializability checker,
// but a history of single-key ops (no txn) cannot show a cross-key cycle:
// analyze judges it with per-key linearizability and says the scope is
// narrower than the claim, never turning it into a checker error.
func TestIsolationClaimWithoutTxnFallsBackToLinearizability(t *testing.T) {
	planText := isolationPlan("kv", "TODO-free: serializable isolation")
	if !strings.Contains(planText, "| isolation |") {
		t.Fatal("fixture header changed: no isolation claim made")
	}
	if c, _ := checker.Pick("kv", plan.CatIsolation); c != checker.Serializability {
		t.Fatalf("Pick(kv, isolation) = %q: the premise of this test changed", c)
	}
	rep := analyzeOne(t, planText, baseAudit("S1"), nil)
	s := findResult(rep, "S1")
	if s == nil {
		t.Fatal("no S1 result")
	}
	if len(s.Checkers) == 0 || s.Checkers[0].Checker != checker.Linearizability {
		t.Fatalf("checkers = %+v, want per-key linearizability on a history without txn ops", s.Checkers)
	}
	if s.Verdict != PartialModel {
		t.Errorf("verdict %s (%v), want PARTIAL-model: the checker covers less than the isolation claim", s.Verdict, s.Reasons)
	}
}
