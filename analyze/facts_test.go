package analyze

import (
	"testing"

	"github.com/dstgen/dstgen/checker"
	"github.com/dstgen/dstgen/session"
)

// Ops consumed are a history's: two checkers over one history of 6105 ops
// report 6105, not 12210; two runs add their histories.
func TestEvidenceOpsConsumedPerHistory(t *testing.T) {
	run := func(consumed ...int) *loadedRun {
		lr := &loadedRun{run: &session.Run{Attempted: true}}
		for i, c := range consumed {
			lr.results = append(lr.results, checker.Result{Checker: []string{"linearizability", "session"}[i%2], OpsConsumed: c})
		}
		return lr
	}
	for _, c := range []struct {
		name string
		runs []*loadedRun
		want string
	}{
		{"two checkers, one history", []*loadedRun{run(6105, 6105)}, "6105 ops consumed, 0 anomalies"},
		{"a checker that read fewer", []*loadedRun{run(6105, 6000)}, "6105 ops consumed, 0 anomalies"},
		{"two runs", []*loadedRun{run(100, 100), run(50, 50)}, "150 ops consumed, 0 anomalies over 2 runs"},
	} {
		if got, _ := evidenceTexts(&unit{runs: c.runs}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
