package analyze

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dstgen/dstgen/plan"
)

// analyzeOne writes planText as a plan, builds g's run into a session of
// it, lets edit change the session's files (dir is the session dir), and
// analyzes it: the set-up of the one-scenario tests.
func analyzeOne(t *testing.T, planText string, g runGen, edit func(dir string)) *Report {
	t.Helper()
	root := t.TempDir()
	planPath := filepath.Join(root, "plan.md")
	if err := os.WriteFile(planPath, []byte(planText), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(planPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "audit", "20260601T100000Z")
	sessionLog(t, dir, "audit", "../../plan.md")
	g.build(t, dir)
	if edit != nil {
		edit(dir)
	}
	rep, err := Analyze(context.Background(), dir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// isolationPlan is the audit plan with its claim C1 made an isolation
// claim ("multi-key transactions are serializable") and S1 checking it.
func isolationPlan(model, checkerText string) string {
	return strings.Replace(auditPlanHeader,
		"| C1 | \"get/put on a single key are linearizable\" | safety |",
		"| C1 | \"multi-key transactions are serializable\" | isolation |", 1) +
		seriousScenarioChecker("S1", "kv_isolation", model, checkerText)
}
